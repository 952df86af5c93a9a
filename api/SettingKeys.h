// SettingKeys.h -- the keys of the C API's key/value settings
// (include/netc/netc_c.h): netc_train_settings_set's, the `netc train` flags
// in snake_case with one key per field of netc::TrainSettings, and
// netc_compile_options_set's. Each key parses and checks its value with the
// parsers the CLI's flags use.
#pragma once

#include "netc/Training.h"

#include <optional>
#include <string>
#include <string_view>

namespace netc::capi {

/// Sets `key` to `value`: nothing when the key is unknown; otherwise an empty
/// string when the value was accepted, or what is wrong with it. An empty
/// value restores the key's default.
std::optional<std::string> setTrainSetting(TrainSettings &settings, std::string_view key,
                                           std::string_view value);
std::optional<std::string> setCompileOption(CompileOptions &options, std::string_view key,
                                            std::string_view value);

/// The accepted keys, comma-separated, in a fixed order.
const std::string &trainSettingKeys();
const std::string &compileOptionKeys();

} // namespace netc::capi
