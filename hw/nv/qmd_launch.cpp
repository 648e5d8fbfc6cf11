#include "hw/nv/qmd_launch.h"

#include <cstdio>
#include <cstring>

#include "common/error.h"
#include "common/hex.h"

namespace ugpu::hw::nv {

namespace {

// Where each part of a launch lives in one layout: field names, and the shift of address/size fields
// that hold a value in units (`_shifted6` = 64-byte units).
struct Names {
  const char* grid[3];
  const char* reg;
  const char* program[2];
  unsigned program_shift;
  const char* shared;
  unsigned shared_shift;
  const char* local[2];
  unsigned local_shift;
  const char* cb_lower;  // printf formats with the bank
  const char* cb_upper;
  unsigned cb_shift;
  const char* minor;
  // Releases 0 and 1: enable, structure size, 64-bit payload, address lo/hi, payload lo/hi.
  const char* rel[7];  // printf formats with the release index
  const char* dep[4];  // dependent QMD 0: enable, action, prefetch, pointer
  bool prefetch_address;
  bool typed;  // has qmd_type (V04, V05): must say GRID_CTA
};

constexpr Names kV03 = {{"cta_raster_width", "cta_raster_height", "cta_raster_depth"},
                        "register_count_v",
                        {"program_address_lower", "program_address_upper"},
                        0,
                        "shared_memory_size",
                        0,
                        {"shader_local_memory_low_size", "shader_local_memory_high_size"},
                        0,
                        "constant_buffer_addr_lower_%u",
                        "constant_buffer_addr_upper_%u",
                        0,
                        "qmd_version",
                        {"release%u_enable", "release%u_structure_size", "release%u_payload64b", "release%u_address_lower", "release%u_address_upper",
                         "release%u_payload_lower", "release%u_payload_upper"},
                        {"dependent_qmd0_enable", "dependent_qmd0_action", "dependent_qmd0_prefetch", "dependent_qmd0_pointer"},
                        true,
                        false};
constexpr Names kV04 = {{"grid_width", "grid_height", "grid_depth"},
                        "register_count",
                        {"program_address_lower", "program_address_upper"},
                        0,
                        "shared_memory_size",
                        0,
                        {"shader_local_memory_low_size", "shader_local_memory_high_size"},
                        0,
                        "constant_buffer_addr_lower_shifted6_%u",
                        "constant_buffer_addr_upper_shifted6_%u",
                        6,
                        "qmd_minor_version",
                        {"release_enable_%u", "release_structure_size_%u", "release_payload64b_%u", "release_semaphore%u_addr_lower",
                         "release_semaphore%u_addr_upper", "release_semaphore%u_payload_lower", "release_semaphore%u_payload_upper"},
                        {"dependent_qmd_enable_0", "dependent_qmd_action_0", "dependent_qmd_prefetch_0", "dependent_qmd0_pointer"},
                        true,
                        true};
constexpr Names kV05 = {{"grid_width", "grid_height", "grid_depth"},
                        "register_count",
                        {"program_address_lower_shifted4", "program_address_upper_shifted4"},
                        4,
                        "shared_memory_size_shifted7",
                        7,
                        {"shader_local_memory_low_size_shifted4", "shader_local_memory_high_size_shifted4"},
                        4,
                        "constant_buffer_addr_lower_shifted6_%u",
                        "constant_buffer_addr_upper_shifted6_%u",
                        6,
                        "qmd_minor_version",
                        {"release_enable_%u", "release_structure_size_%u", "release_payload64b_%u", "release_semaphore%u_addr_lower",
                         "release_semaphore%u_addr_upper", "release_semaphore%u_payload_lower", "release_semaphore%u_payload_upper"},
                        {"dependent_qmd_enable_0", "dependent_qmd_action_0", "dependent_qmd_prefetch_0", "dependent_qmd0_pointer"},
                        false,
                        true};

const Names& names(const QmdLayout& l) { return l.major == 3 ? kV03 : l.major == 4 ? kV04 : kV05; }

std::string fmt(const char* f, unsigned i) {
  char b[96];
  std::snprintf(b, sizeof b, f, i);
  return b;
}

const QmdField& field(const QmdLayout& l, const std::string& name) {
  const QmdField* f = find_field(l, name);
  if (!f) throw Error(std::string("QMD ") + l.name + " has no field " + name);
  return *f;
}

uint32_t value_of(const QmdLayout& l, const char* field_name, const char* value) {
  const QmdField* f = find_field(l, field_name);
  const char* alias = f ? f->alias_of : nullptr;  // values are listed under the field's other name
  for (const QmdValue& v : l.values)
    if ((std::strcmp(v.field, field_name) == 0 || (alias && std::strcmp(v.field, alias) == 0)) && std::strcmp(v.name, value) == 0) return v.value;
  throw Error(std::string("QMD ") + l.name + ": field " + field_name + " has no value " + value);
}

struct Writer {
  const QmdLayout& l;
  std::span<uint32_t> w;
  void set(const std::string& name, uint64_t v) {
    const QmdField& f = field(l, name);
    if (v > 0xffffffffu || !qmd_set(w, f, static_cast<uint32_t>(v)))
      throw Error(std::string("QMD ") + l.name + ": " + hex(v) + " does not fit " + name + " (" + std::to_string(f.width()) + " bits)");
  }
  void set_if(const char* name, uint64_t v) {
    if (find_field(l, name)) set(name, v);
  }
  // An address or size split over a lower (32-bit) and an upper field, in units of 2^shift bytes.
  void set_split(const std::string& lower, const std::string& upper, uint64_t v, unsigned shift, const char* what) {
    if (v & ((uint64_t{1} << shift) - 1))
      throw Error(std::string("QMD ") + l.name + ": " + what + " " + hex(v) + " is not a multiple of " + std::to_string(1u << shift));
    v >>= shift;
    set(lower, v & 0xffffffffu);
    set(upper, v >> 32);
  }
  void set_units(const std::string& name, uint64_t v, unsigned shift, const char* what) {
    if (v & ((uint64_t{1} << shift) - 1))
      throw Error(std::string("QMD ") + l.name + ": " + what + " " + std::to_string(v) + " is not a multiple of " + std::to_string(1u << shift));
    set(name, v >> shift);
  }
};

struct Reader {
  const QmdLayout& l;
  std::span<const uint32_t> w;
  uint64_t get(const std::string& name) const { return qmd_get(w, field(l, name)); }
  uint64_t split(const std::string& lower, const std::string& upper, unsigned shift) const { return (get(upper) << 32 | get(lower)) << shift; }
};

}  // namespace

const QmdLayout& qmd_layout(unsigned major) {
  switch (major) {
    case 3: return kQmdV03_00;
    case 4: return kQmdV04_00;
    case 5: return kQmdV05_00;
    default: throw Error("QMD version " + std::to_string(major) + " is not one ugpu knows (V03, V04, V05)");
  }
}

const QmdLayout* qmd_layout_of(std::span<const uint32_t> words, std::span<const QmdLayout* const> accepted) {
  for (const QmdLayout* l : accepted) {
    const QmdField* major = find_field(*l, "qmd_major_version");
    const QmdField* minor = find_field(*l, names(*l).minor);
    if (major && minor && qmd_get(words, *major) == l->major && qmd_get(words, *minor) == l->minor) return l;
  }
  return nullptr;
}

void encode_qmd(const QmdLayout& l, const QmdLaunch& q, std::span<uint32_t> words) {
  if (words.size() * 4 < l.bytes) throw Error(std::string("QMD ") + l.name + " needs " + std::to_string(l.bytes) + " bytes");
  std::fill(words.begin(), words.begin() + l.bytes / 4, 0u);
  const Names& n = names(l);
  Writer w{l, words.first(l.bytes / 4)};
  w.set("qmd_major_version", l.major);
  w.set(n.minor, l.minor);
  if (n.typed) w.set("qmd_type", value_of(l, "qmd_type", "grid_cta"));
  w.set("qmd_group_id", 0x3f);
  w.set_if("sm_global_caching_enable", 1);
  w.set("api_visible_call_limit", value_of(l, "api_visible_call_limit", "no_check"));
  w.set("sampler_index", value_of(l, "sampler_index", "via_header_index"));
  w.set("cwd_membar_type", value_of(l, "cwd_membar_type", "l1_sysmembar"));
  if (q.invalidate_caches)
    for (const char* f : {"invalidate_texture_header_cache", "invalidate_texture_sampler_cache", "invalidate_texture_data_cache",
                          "invalidate_shader_data_cache", "invalidate_instruction_cache", "invalidate_shader_constant_cache"})
      w.set(f, 1);
  for (int i = 0; i < 3; ++i) {
    if (q.grid[i] == 0 || q.block[i] == 0) throw Error("QMD: a launch of zero CTAs or zero threads in dimension " + std::to_string(i));
    w.set(n.grid[i], q.grid[i]);
    w.set("cta_thread_dimension" + std::to_string(i), q.block[i]);
  }
  w.set(n.reg, q.registers);
  w.set("barrier_count", q.barriers);
  w.set_split(n.program[0], n.program[1], q.program_address, n.program_shift, "program address");
  if (q.program_prefetch_bytes) {
    w.set("program_prefetch_size", std::min<uint32_t>(q.program_prefetch_bytes >> 8, 0x1ff));
    if (n.prefetch_address) {
      w.set("program_prefetch_addr_lower_shifted", (q.program_address >> 8) & 0xffffffffu);
      w.set("program_prefetch_addr_upper_shifted", q.program_address >> 40);
    }
  }
  w.set_units(n.shared, q.shared_bytes, n.shared_shift, "shared memory size");
  w.set("min_sm_config_shared_mem_size", q.sm_shared_config);
  w.set("target_sm_config_shared_mem_size", q.sm_shared_config);
  w.set("max_sm_config_shared_mem_size", q.sm_shared_config_max);
  w.set_units(n.local[0], q.local_low_bytes, n.local_shift, "local memory size");
  w.set_units(n.local[1], q.local_high_bytes, n.local_shift, "local memory size");
  w.set("sass_version", q.sass_version);
  for (unsigned i = 0; i < q.cbanks.size(); ++i) {
    const auto& c = q.cbanks[i];
    if (!c.valid) continue;
    w.set(fmt("constant_buffer_valid_%u", i), 1);
    w.set(fmt("constant_buffer_invalidate_%u", i), 1);
    w.set_split(fmt(n.cb_lower, i), fmt(n.cb_upper, i), c.address, n.cb_shift, "constant buffer address");
    w.set(fmt("constant_buffer_size_shifted4_%u", i), (uint64_t{c.size} + 15) / 16);
  }
  for (unsigned i = 0; i < q.releases.size(); ++i) {
    const auto& r = q.releases[i];
    if (!r.enable) continue;
    w.set(fmt(n.rel[0], i), 1);
    w.set(fmt(n.rel[1], i), value_of(l, fmt(n.rel[1], i).c_str(), r.timestamp ? "semaphore_four_words" : "semaphore_one_word"));
    w.set(fmt(n.rel[2], i), r.payload64);
    w.set(fmt(n.rel[3], i), r.address & 0xffffffffu);
    w.set(fmt(n.rel[4], i), r.address >> 32);
    w.set(fmt(n.rel[5], i), r.payload & 0xffffffffu);
    w.set(fmt(n.rel[6], i), r.payload >> 32);
  }
  if (q.dependent.enable) qmd_set_dependent(l, words, q.dependent.qmd_address);
}

namespace {
struct LaunchFields {
  const QmdField *grid[3], *block[3], *cb_valid, *cb_lower, *cb_upper, *cb_size;
  unsigned cb_shift;
};
const LaunchFields& launch_fields(const QmdLayout& l) {
  auto make = [](const QmdLayout& l) {
    const Names& n = names(l);
    LaunchFields f{};
    for (int i = 0; i < 3; ++i) f.grid[i] = &field(l, n.grid[i]), f.block[i] = &field(l, "cta_thread_dimension" + std::to_string(i));
    f.cb_valid = &field(l, "constant_buffer_valid_0");
    f.cb_lower = &field(l, fmt(n.cb_lower, 0));
    f.cb_upper = &field(l, fmt(n.cb_upper, 0));
    f.cb_size = &field(l, "constant_buffer_size_shifted4_0");
    f.cb_shift = n.cb_shift;
    return f;
  };
  static const LaunchFields v3 = make(kQmdV03_00), v4 = make(kQmdV04_00), v5 = make(kQmdV05_00);
  return l.major == 3 ? v3 : l.major == 4 ? v4 : v5;
}
}  // namespace

void qmd_set_launch(const QmdLayout& l, std::span<uint32_t> words, const std::array<uint32_t, 3>& grid, const std::array<uint32_t, 3>& block,
                    uint64_t cbank0_address, uint32_t cbank0_size) {
  const LaunchFields& f = launch_fields(l);
  auto set = [&](const QmdField& field, uint64_t v, const char* what) {
    if (v > 0xffffffffu || !qmd_set(words, field, static_cast<uint32_t>(v)))
      throw Error(std::string("QMD ") + l.name + ": " + hex(v) + " does not fit " + field.name + " (" + what + ")");
  };
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0) throw Error("QMD: a launch of zero CTAs or zero threads in dimension " + std::to_string(i));
    set(*f.grid[i], grid[i], "grid");
    set(*f.block[i], block[i], "block");
  }
  if (cbank0_address & ((uint64_t{1} << f.cb_shift) - 1))
    throw Error(std::string("QMD ") + l.name + ": constant buffer address " + hex(cbank0_address) + " is not a multiple of " +
                std::to_string(1u << f.cb_shift));
  set(*f.cb_valid, 1, "constant buffer 0");
  set(*f.cb_lower, (cbank0_address >> f.cb_shift) & 0xffffffffu, "constant buffer 0 address");
  set(*f.cb_upper, cbank0_address >> f.cb_shift >> 32, "constant buffer 0 address");
  set(*f.cb_size, (uint64_t{cbank0_size} + 15) / 16, "constant buffer 0 size");
}

void qmd_set_dependent(const QmdLayout& l, std::span<uint32_t> words, uint64_t next_qmd) {
  const Names& n = names(l);
  if (next_qmd % 256 || next_qmd >> 40) throw Error("QMD chaining: the next QMD at " + hex(next_qmd) + " must be 256-byte aligned and below 2^40");
  Writer w{l, words.first(l.bytes / 4)};
  w.set(n.dep[0], 1);
  w.set(n.dep[1], value_of(l, n.dep[1], "qmd_schedule"));
  w.set(n.dep[2], 1);
  w.set(n.dep[3], next_qmd >> 8);
}

QmdLaunch decode_qmd(const QmdLayout& l, std::span<const uint32_t> words) {
  if (words.size() * 4 < l.bytes) throw Error(std::string("QMD ") + l.name + " needs " + std::to_string(l.bytes) + " bytes");
  const Names& n = names(l);
  Reader r{l, words};
  QmdLaunch q;
  if (r.get("qmd_major_version") != l.major || r.get(n.minor) != l.minor)
    throw Error(std::string("the QMD's version fields say ") + std::to_string(r.get("qmd_major_version")) + "." + std::to_string(r.get(n.minor)) +
                ", not " + l.name);
  if (n.typed && r.get("qmd_type") != value_of(l, "qmd_type", "grid_cta")) {
    uint32_t t = static_cast<uint32_t>(r.get("qmd_type"));
    const char* name = value_name(l, field(l, "qmd_type"), t);
    throw Error("qmd_type " + std::to_string(t) + " (" + (name ? name : "?") + "): only GRID_CTA launches are modelled");
  }
  for (int i = 0; i < 3; ++i) {
    q.grid[i] = static_cast<uint32_t>(r.get(n.grid[i]));
    q.block[i] = static_cast<uint32_t>(r.get("cta_thread_dimension" + std::to_string(i)));
    if (!q.grid[i] || !q.block[i]) throw Error("a launch of zero CTAs or zero threads in dimension " + std::to_string(i));
  }
  q.registers = static_cast<uint32_t>(r.get(n.reg));
  q.barriers = static_cast<uint32_t>(r.get("barrier_count"));
  q.program_address = r.split(n.program[0], n.program[1], n.program_shift);
  q.program_prefetch_bytes = static_cast<uint32_t>(r.get("program_prefetch_size") << 8);
  q.shared_bytes = static_cast<uint32_t>(r.get(n.shared) << n.shared_shift);
  q.sm_shared_config = static_cast<uint32_t>(r.get("target_sm_config_shared_mem_size"));
  q.sm_shared_config_max = static_cast<uint32_t>(r.get("max_sm_config_shared_mem_size"));
  q.local_low_bytes = static_cast<uint32_t>(r.get(n.local[0]) << n.local_shift);
  q.local_high_bytes = static_cast<uint32_t>(r.get(n.local[1]) << n.local_shift);
  q.sass_version = static_cast<uint32_t>(r.get("sass_version"));
  for (unsigned i = 0; i < q.cbanks.size(); ++i) {
    auto& c = q.cbanks[i];
    c.valid = r.get(fmt("constant_buffer_valid_%u", i));
    if (!c.valid) continue;
    c.address = r.split(fmt(n.cb_lower, i), fmt(n.cb_upper, i), n.cb_shift);
    c.size = static_cast<uint32_t>(r.get(fmt("constant_buffer_size_shifted4_%u", i)) * 16);
  }
  for (unsigned i = 0; i < q.releases.size(); ++i) {
    auto& rel = q.releases[i];
    rel.enable = r.get(fmt(n.rel[0], i));
    if (!rel.enable) continue;
    std::string size_field = fmt(n.rel[1], i);
    uint32_t size = static_cast<uint32_t>(r.get(size_field));
    if (size == value_of(l, size_field.c_str(), "semaphore_four_words")) rel.timestamp = true;
    else if (size == value_of(l, size_field.c_str(), "semaphore_one_word")) rel.timestamp = false;
    else throw Error("release " + std::to_string(i) + ": structure size " + std::to_string(size) + " is not modelled");
    rel.payload64 = r.get(fmt(n.rel[2], i));
    rel.address = r.get(fmt(n.rel[4], i)) << 32 | r.get(fmt(n.rel[3], i));
    rel.payload = r.get(fmt(n.rel[6], i)) << 32 | r.get(fmt(n.rel[5], i));
    const char* red = l.major == 3 ? "release%u_reduction_enable" : "release_reduction_enable_%u";
    if (r.get(fmt(red, i))) throw Error("release " + std::to_string(i) + ": reductions are not modelled");
  }
  q.dependent.enable = r.get(n.dep[0]);
  if (q.dependent.enable) {
    if (r.get(n.dep[1]) != value_of(l, n.dep[1], "qmd_schedule"))
      throw Error("dependent QMD action " + std::to_string(r.get(n.dep[1])) + ": only SCHEDULE is modelled");
    q.dependent.qmd_address = r.get(n.dep[3]) << 8;
    q.dependent.prefetch = r.get(n.dep[2]);
  }
  q.invalidate_caches = r.get("invalidate_instruction_cache");
  return q;
}

std::string describe_qmd(const QmdLayout& l, std::span<const uint32_t> words) {
  std::string s = std::string("QMD ") + l.name + ":";
  for (const QmdField& f : l.fields) {
    if (f.alias_of) continue;
    uint32_t v = qmd_get(words, f);
    if (!v) continue;
    s += " " + std::string(f.name) + "=" + hex(v);
    if (const char* name = value_name(l, f, v)) s += std::string("(") + name + ")";
  }
  return s;
}

void qmd_set_named(const QmdLayout& l, std::span<uint32_t> words, const char* name, uint64_t value) { Writer{l, words}.set(name, value); }
uint64_t qmd_get_named(const QmdLayout& l, std::span<const uint32_t> words, const char* name) { return Reader{l, words}.get(name); }

}  // namespace ugpu::hw::nv
