#include "codegen/elf.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/Object/ELFObjectFile.h>

#include <cstring>

namespace ugpu::codegen {
namespace {

using Elf = llvm::object::ELF64LEFile;

template <class T>
T check(llvm::Expected<T> v, const std::string& what, const std::string& doing) {
  if (!v) throw ElfError(what + ": " + doing + ": " + llvm::toString(v.takeError()));
  return std::move(*v);
}

Elf open(std::span<const uint8_t> file, const std::string& what) {
  if (file.size() < 64) throw ElfError(what + ": not an ELF file (" + std::to_string(file.size()) + " bytes, too short for a header)");
  if (std::memcmp(file.data(),
                  "\x7f"
                  "ELF",
                  4) != 0)
    throw ElfError(what + ": not an ELF file (bad magic)");
  if (file[4] != llvm::ELF::ELFCLASS64 || file[5] != llvm::ELF::ELFDATA2LSB) throw ElfError(what + ": only 64-bit little-endian ELF is supported");
  return check(Elf::create(llvm::StringRef(reinterpret_cast<const char*>(file.data()), file.size())), what, "reading the ELF header");
}

uint16_t machine_id(ElfMachine m) {
  switch (m) {
    case ElfMachine::X86_64: return llvm::ELF::EM_X86_64;
    case ElfMachine::AMDGPU: return llvm::ELF::EM_AMDGPU;
    case ElfMachine::CUDA: return llvm::ELF::EM_CUDA;
  }
  return 0;
}

void put(std::vector<uint8_t>& img, uint64_t at, uint64_t v, unsigned bytes, const std::string& what) {
  if (at > img.size() || img.size() - at < bytes) throw ElfError(what + ": a relocation points outside its section");
  for (unsigned i = 0; i < bytes; ++i) img[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get(const std::vector<uint8_t>& img, uint64_t at, unsigned bytes, const std::string& what) {
  if (at > img.size() || img.size() - at < bytes) throw ElfError(what + ": a relocation points outside its section");
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes; ++i) v |= uint64_t{img[at + i]} << (8 * i);
  return v;
}

void fits32(uint64_t u, bool is_signed, const std::string& what) {
  int64_t v = static_cast<int64_t>(u);
  bool ok = is_signed ? (v >= INT32_MIN && v <= INT32_MAX) : (v >= 0 && v <= static_cast<int64_t>(UINT32_MAX));
  if (!ok) throw ElfError(what + ": a 32-bit relocation does not fit (value " + std::to_string(v) + ")");
}

}  // namespace

const ElfSection* ElfImage::section(const std::string& name) const {
  for (const ElfSection& s : sections)
    if (s.name == name) return &s;
  return nullptr;
}

std::vector<uint8_t> elf_section_bytes(std::span<const uint8_t> file, const std::string& name, const std::string& what) {
  Elf elf = open(file, what);
  for (const auto& sh : check(elf.sections(), what, "reading the section table")) {
    if (check(elf.getSectionName(sh), what, "reading a section name") != name) continue;
    if (sh.sh_type == llvm::ELF::SHT_NOBITS) return {};
    auto bytes = check(elf.getSectionContents(sh), what, "reading section " + name);
    return {bytes.begin(), bytes.end()};
  }
  return {};
}

ElfImage link_elf(std::span<const uint8_t> file, ElfMachine machine, uint64_t base, const std::string& what) {
  Elf elf = open(file, what);
  const auto& hdr = elf.getHeader();
  if (hdr.e_machine != machine_id(machine))
    throw ElfError(what + ": ELF machine " + std::to_string(hdr.e_machine) + " is not the expected " + std::to_string(machine_id(machine)));
  auto shdrs = check(elf.sections(), what, "reading the section table");
  ElfImage img;
  img.base = base;
  std::vector<int64_t> placed(shdrs.size(), -1);  // image offset per section index
  // Lay out allocated sections.
  for (size_t i = 0; i < shdrs.size(); ++i) {
    const auto& sh = shdrs[i];
    ElfSection s;
    s.name = check(elf.getSectionName(sh), what, "reading a section name").str();
    s.type = sh.sh_type;
    s.flags = sh.sh_flags;
    s.size = sh.sh_size;
    s.allocated = (sh.sh_flags & llvm::ELF::SHF_ALLOC) && sh.sh_type != llvm::ELF::SHT_NULL;
    if (!s.allocated) {
      s.offset = sh.sh_offset;
      img.sections.push_back(s);
      continue;
    }
    uint64_t align = std::max<uint64_t>(sh.sh_addralign, 1);
    if (align & (align - 1)) throw ElfError(what + ": section " + s.name + " has alignment " + std::to_string(align) + ", not a power of two");
    if (align > 65536) throw ElfError(what + ": section " + s.name + " asks for an alignment of " + std::to_string(align));
    if (sh.sh_size > (uint64_t{1} << 30))
      throw ElfError(what + ": section " + s.name + " is implausibly large (" + std::to_string(sh.sh_size) + " bytes)");
    uint64_t at = sh.sh_addr ? sh.sh_addr : (img.bytes.size() + align - 1) / align * align;
    if (sh.sh_addr && (sh.sh_addr > (uint64_t{1} << 30) || sh.sh_addr % align))
      throw ElfError(what + ": section " + s.name + " has an unusable address " + std::to_string(sh.sh_addr));
    if (img.bytes.size() < at + sh.sh_size) img.bytes.resize(at + sh.sh_size, 0);
    if (sh.sh_type != llvm::ELF::SHT_NOBITS) {
      auto data = check(elf.getSectionContents(sh), what, "reading section " + s.name);
      if (!data.empty()) std::memcpy(img.bytes.data() + at, data.data(), std::min<size_t>(data.size(), static_cast<size_t>(sh.sh_size)));
    }
    s.offset = at;
    placed[i] = static_cast<int64_t>(at);
    img.sections.push_back(s);
  }
  // Symbols.
  const Elf::Elf_Shdr* symtab = nullptr;
  for (const auto& sh : shdrs)
    if (sh.sh_type == llvm::ELF::SHT_SYMTAB) symtab = &sh;
  std::vector<std::pair<std::string, int64_t>> symvals;  // per symbol index: name, image offset or -1
  if (symtab) {
    auto syms = check(elf.symbols(symtab), what, "reading the symbol table");
    auto strtab = check(elf.getStringTableForSymtab(*symtab), what, "reading the symbol names");
    for (const auto& sym : syms) {
      std::string name = check(sym.getName(strtab), what, "reading a symbol name").str();
      int64_t v = -1;
      uint16_t shn = sym.st_shndx;
      if (shn == llvm::ELF::SHN_ABS) v = static_cast<int64_t>(sym.st_value - base);
      else if (shn != llvm::ELF::SHN_UNDEF && shn < llvm::ELF::SHN_LORESERVE) {
        if (shn >= placed.size()) throw ElfError(what + ": symbol " + name + " names section " + std::to_string(shn) + ", which does not exist");
        uint64_t rel = sym.st_value - (hdr.e_type == llvm::ELF::ET_REL ? 0 : shdrs[shn].sh_addr);
        if (placed[shn] >= 0 && rel <= shdrs[shn].sh_size) v = placed[shn] + static_cast<int64_t>(rel);
      }
      if (sym.getType() == llvm::ELF::STT_SECTION && shn < placed.size() && placed[shn] >= 0) v = placed[shn];
      symvals.push_back({name, v});
      if (v >= 0 && !name.empty() && sym.getType() != llvm::ELF::STT_SECTION && sym.getType() != llvm::ELF::STT_FILE)
        img.symbols[name] = static_cast<uint64_t>(v);
    }
  }
  // Relocations.
  for (const auto& sh : shdrs) {
    if (sh.sh_type != llvm::ELF::SHT_RELA && sh.sh_type != llvm::ELF::SHT_REL) continue;
    if (sh.sh_info >= placed.size())
      throw ElfError(what + ": a relocation section targets section " + std::to_string(sh.sh_info) + ", which does not exist");
    int64_t target = placed[sh.sh_info];
    if (target < 0) continue;  // relocations of debug sections and other non-loaded data
    uint64_t tsize = shdrs[sh.sh_info].sh_size;
    auto apply = [&](uint64_t off, uint32_t sym, uint32_t type, int64_t addend, bool has_addend) {
      if (off >= tsize) throw ElfError(what + ": a relocation offset " + std::to_string(off) + " is outside its section");
      if (sym >= symvals.size()) throw ElfError(what + ": a relocation names symbol " + std::to_string(sym) + ", which does not exist");
      if (symvals[sym].second < 0 && sym != 0)
        throw ElfError(what + ": undefined symbol '" + symvals[sym].first + "' (kernels may not call outside functions)");
      uint64_t at = static_cast<uint64_t>(target) + off;
      // Address arithmetic wraps modulo 2^64, as it does in hardware; fits32 checks what must fit.
      uint64_t S = sym ? base + static_cast<uint64_t>(symvals[sym].second) : 0, P = base + at;
      auto A = [&](unsigned bytes) { return has_addend ? static_cast<uint64_t>(addend) : get(img.bytes, at, bytes, what); };
      std::string tname = std::to_string(type);
      switch (machine) {
        case ElfMachine::X86_64:
          switch (type) {
            case llvm::ELF::R_X86_64_64: return put(img.bytes, at, S + A(8), 8, what);
            case llvm::ELF::R_X86_64_PC64: return put(img.bytes, at, S + A(8) - P, 8, what);
            case llvm::ELF::R_X86_64_PC32:
            case llvm::ELF::R_X86_64_PLT32: {
              uint64_t v = S + A(4) - P;
              fits32(v, true, what);
              return put(img.bytes, at, v, 4, what);
            }
            case llvm::ELF::R_X86_64_32:
            case llvm::ELF::R_X86_64_32S: {
              uint64_t v = S + A(4);
              fits32(v, type == llvm::ELF::R_X86_64_32S, what);
              return put(img.bytes, at, v, 4, what);
            }
            default: break;
          }
          break;
        case ElfMachine::AMDGPU:
          switch (type) {
            case llvm::ELF::R_AMDGPU_NONE: return;
            case llvm::ELF::R_AMDGPU_ABS64: return put(img.bytes, at, S + A(8), 8, what);
            case llvm::ELF::R_AMDGPU_REL64: return put(img.bytes, at, S + A(8) - P, 8, what);
            case llvm::ELF::R_AMDGPU_ABS32:
            case llvm::ELF::R_AMDGPU_ABS32_LO: return put(img.bytes, at, (S + A(4)), 4, what);
            case llvm::ELF::R_AMDGPU_ABS32_HI: return put(img.bytes, at, (S + A(4)) >> 32, 4, what);
            case llvm::ELF::R_AMDGPU_REL32:
            case llvm::ELF::R_AMDGPU_REL32_LO: return put(img.bytes, at, (S + A(4) - P), 4, what);
            case llvm::ELF::R_AMDGPU_REL32_HI: return put(img.bytes, at, (S + A(4) - P) >> 32, 4, what);
            default: break;
          }
          break;
        case ElfMachine::CUDA:
          switch (type) {
            case 2: return put(img.bytes, at, S + A(8), 8, what);
            case 0x38: return put(img.bytes, at, (S + A(4)), 4, what);
            case 0x39: return put(img.bytes, at, (S + A(4)) >> 32, 4, what);
            default: break;
          }
          break;
      }
      throw ElfError(what + ": unsupported relocation type " + tname + " in section " +
                     check(elf.getSectionName(shdrs[sh.sh_info]), what, "reading a section name").str());
    };
    if (sh.sh_type == llvm::ELF::SHT_RELA) {
      for (const auto& r : check(elf.relas(sh), what, "reading relocations"))
        apply(r.r_offset, r.getSymbol(false), r.getType(false), r.r_addend, true);
    } else {
      for (const auto& r : check(elf.rels(sh), what, "reading relocations")) apply(r.r_offset, r.getSymbol(false), r.getType(false), 0, false);
    }
  }
  return img;
}

}  // namespace ugpu::codegen
