// The QMD layouts of hw/nv/qmd.h over the generated tables, and their lookups and self-check.
#include "hw/nv/qmd.h"

#include <vector>

#include "hw/nv/qmd_fields.h"

namespace ugpu::hw::nv {

namespace {
template <class L>
constexpr QmdLayout layout(const char* name) {
  return QmdLayout{name, L::kMajor, L::kMinor, L::kBytes, L::fields, L::values};
}
}  // namespace

const QmdLayout kQmdV03_00 = layout<QmdV03_00>("V03_00");
const QmdLayout kQmdV04_00 = layout<QmdV04_00>("V04_00");
const QmdLayout kQmdV05_00 = layout<QmdV05_00>("V05_00");

const QmdLayout* find_qmd_layout(uint8_t major, uint8_t minor) {
  for (const QmdLayout* l : {&kQmdV03_00, &kQmdV04_00, &kQmdV05_00})
    if (l->major == major && l->minor == minor) return l;
  return nullptr;
}

const QmdField* find_field(const QmdLayout& layout, std::string_view name) {
  for (const QmdField& f : layout.fields)
    if (name == f.name) return &f;
  return nullptr;
}

const char* value_name(const QmdLayout& layout, const QmdField& field, uint32_t value) {
  std::string_view name = field.alias_of ? field.alias_of : field.name;
  for (const QmdValue& v : layout.values)
    if (v.value == value && name == v.field) return v.name;
  return nullptr;
}

std::string check_layout(const QmdLayout& layout) {
  std::string out;
  auto problem = [&out](const std::string& s) { out += s + "\n"; };
  const uint32_t nbits = layout.bytes * 8u;
  std::vector<const QmdField*> owner(nbits, nullptr);
  for (size_t i = 0; i < layout.fields.size(); ++i) {
    const QmdField& f = layout.fields[i];
    std::string where = std::string(layout.name) + "." + f.name + " (" + std::to_string(f.hi) + ":" + std::to_string(f.lo) + ")";
    for (size_t j = 0; j < i; ++j)
      if (std::string_view(f.name) == layout.fields[j].name) problem(where + ": name appears twice");
    if (f.hi < f.lo || f.hi >= nbits) {
      problem(where + ": outside the " + std::to_string(layout.bytes) + "-byte QMD");
      continue;
    }
    if (f.hi / 32 != f.lo / 32) problem(where + ": crosses a dword boundary");
    if (f.alias_of) {
      const QmdField* target = find_field(layout, f.alias_of);
      if (!target || target->alias_of || target->hi != f.hi || target->lo != f.lo)
        problem(where + ": alias of " + f.alias_of + ", which is not a field with the same bits");
      continue;
    }
    for (uint32_t b = f.lo; b <= f.hi; ++b) {
      if (owner[b]) {
        problem(where + ": bit " + std::to_string(b) + " is also " + owner[b]->name);
        break;
      }
      owner[b] = &f;
    }
  }
  for (const QmdValue& v : layout.values) {
    const QmdField* f = find_field(layout, v.field);
    if (!f) problem(std::string(layout.name) + ": value " + v.name + " names no field " + v.field);
    else if (f->width() < 32 && (v.value >> f->width()) != 0)
      problem(std::string(layout.name) + "." + v.field + ": value " + v.name + " does not fit the field");
  }
  return out;
}

}  // namespace ugpu::hw::nv
