// Network.cpp -- name tables and kind properties derived from the .def lists.
#include "ir/Network.h"

#include <algorithm>

namespace netc::ir {

namespace {
#define ATTR_BIT(Name) attrBit(Attr::Name)
struct BundleKindInfo {
  std::string_view name;
  bool trainable;
  bool geometric;
  AttrMask allowed;
  AttrMask required;
};
const BundleKindInfo kBundleKinds[] = {
#define BUNDLE_KIND(Id, Spelling, Trainable, Geometric, Allowed, Required)                                   \
  {Spelling, Trainable, Geometric, Allowed, Required},
#include "ir/BundleKinds.def"
#undef BUNDLE_KIND
};
#undef ATTR_BIT

struct AttrInfo {
  std::string_view name;
  AttrValueKind kind;
};
const AttrInfo kAttrs[] = {
#define ATTRIBUTE(Name, Kind) {#Name, AttrValueKind::Kind},
#include "ir/Attributes.def"
#undef ATTRIBUTE
};

const std::string_view kActivations[] = {
#define ACTIVATION(Id, Spelling) Spelling,
#include "ir/Activations.def"
#undef ACTIVATION
};
const std::string_view kKernelKinds[] = {
#define KERNEL_KIND(Id, Spelling, Description) Spelling,
#include "ir/KernelKinds.def"
#undef KERNEL_KIND
};
} // namespace

std::string_view kernelKindName(KernelKind kind) {
  return kKernelKinds[static_cast<int>(kind)];
}

std::string_view layerKindName(LayerKind kind) {
  switch (kind) {
  case LayerKind::Input: return "input";
  case LayerKind::Hidden: return "hidden";
  case LayerKind::Output: return "output";
  }
  return "hidden";
}

std::string_view taskName(Task task) {
  switch (task) {
  case Task::Unspecified: return "unspecified";
  case Task::Multiclass: return "multiclass";
  case Task::Binary: return "binary";
  case Task::Regression: return "regression";
  }
  return "unspecified";
}

std::string_view bundleKindName(BundleKind kind) {
  return kBundleKinds[static_cast<int>(kind)].name;
}
std::string bundleKindWithArticle(BundleKind kind) {
  std::string_view name = bundleKindName(kind);
  bool vowel = !name.empty() && std::string_view("aeiou").find(name[0]) != std::string_view::npos;
  return std::string(vowel ? "an '" : "a '") + std::string(name) + "'";
}
bool bundleIsTrainable(BundleKind kind) {
  return kBundleKinds[static_cast<int>(kind)].trainable;
}
bool bundleIsGeometric(BundleKind kind) {
  return kBundleKinds[static_cast<int>(kind)].geometric;
}
Fan bundleFan(const Bundle &bundle, int64_t destinationNodes, int64_t sourceNodes) {
  Fan fan;
  if (bundle.kind == BundleKind::All) {
    fan = {sourceNodes, destinationNodes};
  } else if (bundle.kind == BundleKind::Where) {
    fan = {bundle.edges / std::max<int64_t>(1, destinationNodes),
           bundle.edges / std::max<int64_t>(1, sourceNodes)};
  } else {
    fan.in = bundle.geometry.kernelSize;
    fan.out = bundle.geometry.maps;
    for (const DimGeometry &d : bundle.geometry.dims)
      fan.out *= std::max<int64_t>(1, std::min(d.kernel, d.count));
  }
  fan.in = std::max<int64_t>(1, fan.in);
  fan.out = std::max<int64_t>(1, fan.out);
  return fan;
}
AttrMask bundleAllowedAttrs(BundleKind kind) {
  return kBundleKinds[static_cast<int>(kind)].allowed;
}
AttrMask bundleRequiredAttrs(BundleKind kind) {
  return kBundleKinds[static_cast<int>(kind)].required;
}
std::string_view activationName(Activation fn) {
  return kActivations[static_cast<int>(fn)];
}
std::string_view attrName(Attr attr) {
  return kAttrs[static_cast<int>(attr)].name;
}
AttrValueKind attrValueKind(Attr attr) {
  return kAttrs[static_cast<int>(attr)].kind;
}

const std::vector<Attr> &allAttrs() {
  static const std::vector<Attr> attrs = {
#define ATTRIBUTE(Name, Kind) Attr::Name,
#include "ir/Attributes.def"
#undef ATTRIBUTE
  };
  return attrs;
}

const std::vector<Activation> &allActivations() {
  static const std::vector<Activation> fns = {
#define ACTIVATION(Id, Spelling) Activation::Id,
#include "ir/Activations.def"
#undef ACTIVATION
  };
  return fns;
}

const std::vector<BundleKind> &allBundleKinds() {
  static const std::vector<BundleKind> kinds = {
#define BUNDLE_KIND(Id, Spelling, Trainable, Geometric, Allowed, Required) BundleKind::Id,
#include "ir/BundleKinds.def"
#undef BUNDLE_KIND
  };
  return kinds;
}

int Network::findLayer(std::string_view layerName) const {
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i].name == layerName)
      return static_cast<int>(i);
  return -1;
}

} // namespace netc::ir
