// The op registry: every semantic table by mnemonic.
#include "emu/amd/rdna3/ops.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace ugpu::emu::amd {

std::string_view keep_name(std::string s) {
  static std::mutex mu;
  static std::deque<std::string> names;
  std::lock_guard lock(mu);
  return names.emplace_back(std::move(s));
}

const OpDef* find_op(std::string_view mnemonic) {
  static const std::unordered_map<std::string_view, const OpDef*> table = [] {
    std::unordered_map<std::string_view, const OpDef*> t;
    for (auto ops : {scalar_ops(), vector_ops(), memory_ops()})
      for (const OpDef& d : ops) t.emplace(d.name, &d);
    return t;
  }();
  auto it = table.find(mnemonic);
  return it == table.end() ? nullptr : it->second;
}

namespace {

constexpr std::string_view kWave64 = "wave64 only (ugpu compiles wave32)";
constexpr std::string_view kGraphics = "graphics and pixel-shader only";
constexpr std::string_view kSystem = "debugger, trap, halt, power and address-translation control, which compute kernels do not use";
constexpr std::string_view kIntrinsic =
    "reached only through target intrinsics ugpu's code generator does not call (buffer resources, WMMA into f16/bf16/int, permlane, GWS, "
    "normalized-format packing, media SAD, ...)";
constexpr std::string_view kAtomic = "an atomic read-modify-write, and ugpu's IR has no atomic operations";

constexpr NotModelled kNotModelled[] = {
    {"s_*_saveexec_b64", kWave64},
    {"s_and_not*_wrexec_b64", kWave64},
    {"s_subvector_loop_*", kWave64},
    {"v_permlane64_b32", kWave64},
    {"s_setkill", kGraphics},
    {"s_endpgm_ordered_ps_done", kGraphics},
    {"v_cube*_f32", kGraphics},
    {"ds_*_gs_reg_rtn", kGraphics},
    {"ds_ordered_count", kGraphics},
    {"s_rfe_b64", kSystem},
    {"s_sethalt", kSystem},
    {"s_cbranch_cdbg*", kSystem},
    {"s_wakeup", kSystem},
    {"s_sendmsghalt", kSystem},
    {"s_incperflevel", kSystem},
    {"s_decperflevel", kSystem},
    {"s_atc_probe*", kSystem},
    {"s_sendmsg_rtn_*", kIntrinsic},
    {"s_buffer_load_*", kIntrinsic},
    {"v_cvt_norm_*_f16", kIntrinsic},
    {"v_cvt_pk_norm_*", kIntrinsic},
    {"v_cvt_pk_u8_f32", kIntrinsic},
    {"v_qsad_pk_u16_u8", kIntrinsic},
    {"v_mqsad_*", kIntrinsic},
    {"v_permlane*16_b32", kIntrinsic},
    {"v_dot2_f16_f16", kIntrinsic},
    {"v_dot2_bf16_bf16", kIntrinsic},
    {"v_trig_preop_f64", kIntrinsic},
    {"v_wmma_f16_*", kIntrinsic},
    {"v_wmma_bf16_*", kIntrinsic},
    {"v_wmma_i32_*", kIntrinsic},
    {"ds_gws_*", kIntrinsic},
    {"ds_swizzle_b32", kIntrinsic},
    {"ds_consume", kIntrinsic},
    {"ds_append", kIntrinsic},
    {"ds_bvh_stack_rtn_b32", kIntrinsic},
    {"*_addtid_b32", kIntrinsic},
    {"ds_rsub_*", kAtomic},
    {"ds_mskor_*", kAtomic},
    {"ds_cmpstore_f*", kAtomic},
    {"ds_cmpstore_rtn_f*", kAtomic},
    {"ds_min_f*", kAtomic},
    {"ds_min_rtn_f*", kAtomic},
    {"ds_max_f*", kAtomic},
    {"ds_max_rtn_f*", kAtomic},
    {"ds_storexchg_2addr_*", kAtomic},
    {"ds_wrap_rtn_b32", kAtomic},
    {"ds_condxchg32_rtn_b64", kAtomic},
    {"*_atomic_cmpswap_f32", kAtomic},
    {"*_atomic_min_f32", kAtomic},
    {"*_atomic_max_f32", kAtomic},
    {"global_atomic_csub_u32", kAtomic},
};

}  // namespace

std::span<const NotModelled> not_modelled() { return kNotModelled; }

bool matches(std::string_view pattern, std::string_view mnemonic) {
  const size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == mnemonic;
  const std::string_view head = pattern.substr(0, star), tail = pattern.substr(star + 1);
  return mnemonic.size() >= head.size() + tail.size() && mnemonic.starts_with(head) && mnemonic.ends_with(tail);
}

std::string_view not_modelled_reason(std::string_view mnemonic) {
  for (const NotModelled& n : kNotModelled)
    if (matches(n.pattern, mnemonic)) return n.reason;
  return "";
}

}  // namespace ugpu::emu::amd
