# SPDX-License-Identifier: BSD-3-Clause
"""Writes tests/data/mosquitto-2.0.11.db with the real broker (Debian's /usr/sbin/mosquitto).

Run as root from the repository root: /usr/bin/python3 tests/data/make_mosquitto_db.py
Two persistent sessions with two subscriptions each, one queued message and one retained
message, then SIGTERM: the broker writes its database at shutdown. Mosquitto 2.0 does not save
shared subscriptions, so the `$share/g/store/x` subscription is not in the file.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

PORT = 18931
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mosquitto-2.0.11.db")


def wait_connected(client):
    deadline = time.monotonic() + 5
    while not client.is_connected() and time.monotonic() < deadline:
        time.sleep(0.05)


def main():
    folder = tempfile.mkdtemp(prefix="mqc-db-")
    os.chmod(folder, 0o777)
    config = os.path.join(folder, "mosquitto.conf")
    with open(config, "w") as f:
        f.write(f"listener {PORT} 127.0.0.1\nallow_anonymous true\npersistence true\n"
                f"persistence_location {folder}/\nlog_dest stderr\n")
    broker = subprocess.Popen(["/usr/sbin/mosquitto", "-c", config])
    time.sleep(0.5)
    try:
        v4 = mqtt.Client(client_id="db-v4", clean_session=False, protocol=mqtt.MQTTv311)
        v4.username_pw_set("alice")
        v4.connect("127.0.0.1", PORT)
        v4.loop_start()
        wait_connected(v4)
        v4.subscribe([("events/a/#", 1), ("queues/jobs", 2)])
        time.sleep(0.3)
        v4.disconnect()
        v4.loop_stop()

        v5 = mqtt.Client(client_id="db-v5", protocol=mqtt.MQTTv5)
        v5.username_pw_set("bob")
        connect = Properties(PacketTypes.CONNECT)
        connect.SessionExpiryInterval = 3600
        v5.connect("127.0.0.1", PORT, clean_start=False, properties=connect)
        v5.loop_start()
        wait_connected(v5)
        subscribe = Properties(PacketTypes.SUBSCRIBE)
        subscribe.SubscriptionIdentifier = 7
        v5.subscribe([("$share/g/store/x", 1), ("commands/door", 0)], properties=subscribe)
        time.sleep(0.3)
        v5.disconnect()
        v5.loop_stop()

        publisher = mqtt.Client(client_id="db-pub", protocol=mqtt.MQTTv311)
        publisher.connect("127.0.0.1", PORT)
        publisher.loop_start()
        wait_connected(publisher)
        publisher.publish("events/a/1", b"queued", qos=1).wait_for_publish(5)
        publisher.publish("retained/t", b"r", qos=1, retain=True).wait_for_publish(5)
        publisher.disconnect()
        publisher.loop_stop()
    finally:
        broker.send_signal(signal.SIGTERM)
        broker.wait(timeout=10)
    shutil.copy(os.path.join(folder, "mosquitto.db"), OUT)
    os.chmod(OUT, 0o644)
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
