// SPDX-License-Identifier: BSD-3-Clause
// The mqtt.connections.v1 API as client.mjs and watch.mjs call it: built at run time from the
// descriptor set protoc wrote for proto/mqtt/connections/v1/connections.proto (no code
// generation step).
import { readFileSync } from "node:fs";

import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";

const PACKAGE = "mqtt.connections.v1";

// The ConnectionsService, and enumNames(ENUM): a function that names a value of the package's
// enum ENUM (the number itself for a value the descriptor set does not know).
export function loadConnectionsApi(descriptorPath) {
  const registry = createFileRegistry(
    fromBinary(FileDescriptorSetSchema, readFileSync(descriptorPath)),
  );
  const enumNames = (name) => {
    const desc = registry.getEnum(`${PACKAGE}.${name}`);
    return (number) => desc.values.find((v) => v.number === number)?.name ?? number;
  };
  return { service: registry.getService(`${PACKAGE}.ConnectionsService`), enumNames };
}
