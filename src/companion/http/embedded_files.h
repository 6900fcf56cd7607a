// SPDX-License-Identifier: BSD-3-Clause
// Files of the repository compiled into the companion, so that it serves them without reading
// anything at run time: the web console (console/) and the API's document (api/openapi.json).
// The build writes their bytes into a generated source (cmake/embed_files.cmake; the list of
// files is in CMakeLists.txt). Constant data, safe on any thread.
#pragma once

#include <string_view>

namespace mqc {

struct EmbeddedFile {
  std::string_view name;   // the path in the repository, e.g. "console/index.html"
  std::string_view bytes;  // the file's content, exactly
};

// The file embedded under `name`, or null when the build embedded no such file.
const EmbeddedFile* FindEmbeddedFile(std::string_view name);

}  // namespace mqc
