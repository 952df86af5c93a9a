// NetworkImpl.h -- the inside of the public netc::Network handle: the
// checked IR network and the layer table the API reports. Shared by the
// compile API (NetcApi.cpp) and the training API (Training.cpp).
#pragma once

#include "ir/Network.h"
#include "netc/netc.h"

#include <string>
#include <vector>

namespace netc {

struct Network::Impl {
  ir::Network network;
  std::string name;
  std::vector<LayerInfo> layers;
};

} // namespace netc
