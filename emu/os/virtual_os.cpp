#include "emu/os/virtual_os.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>

// Linux's mmap flags that VirtualOs honours; where the host has none (macOS), no caller can pass them.
#ifndef MAP_HUGETLB
#define MAP_HUGETLB 0
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0
#endif

namespace ugpu::emu {
using sys::throw_os_error;

namespace {
constexpr size_t kPage = 4096;
std::vector<std::string> split(std::string_view p) {
  std::vector<std::string> out;
  for (size_t i = 0; i < p.size();) {
    size_t j = p.find('/', i);
    if (j == p.npos) j = p.size();
    if (j > i) out.emplace_back(p.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

// eventfd: a counter; a write adds, a read takes the whole count (blocking at 0 unless EFD_NONBLOCK,
// which is O_NONBLOCK: no <sys/eventfd.h>, which only Linux has).
class EventFile : public VirtualFile {
 public:
  EventFile(uint64_t v, bool nonblock) : count_(v), nonblock_(nonblock) {}
  long pread(std::span<uint8_t> dst, uint64_t) override {
    if (dst.size() < 8) return -EINVAL;
    std::unique_lock lock(mu_);
    if (!count_ && nonblock_) return -EAGAIN;
    cv_.wait(lock, [&] { return count_ != 0; });
    std::memcpy(dst.data(), &count_, 8);
    count_ = 0;
    return 8;
  }
  long pwrite(std::span<const uint8_t> src, uint64_t) override {
    uint64_t v;
    if (src.size() < 8) return -EINVAL;
    std::memcpy(&v, src.data(), 8);
    if (v == UINT64_MAX) return -EINVAL;
    std::lock_guard lock(mu_);
    count_ += v;
    cv_.notify_all();
    return 8;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t count_;
  bool nonblock_;
};
}  // namespace

// Page-aligned, zeroed memory from the real kernel, so mmap of it looks like a real mapping.
struct VirtualOs::Block {
  uint8_t* p;
  size_t size;
  explicit Block(size_t n) : size(n) {
    void* m = ::mmap(nullptr, std::max(n, kPage), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw_os_error(errno, "VirtualOs: allocating a " + std::to_string(n) + "-byte file");
    p = static_cast<uint8_t*>(m);
  }
  ~Block() { ::munmap(p, std::max(size, kPage)); }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
};

struct VirtualOs::Node {
  enum Kind { kDir, kFile, kBlock, kDevice, kLink } kind;
  std::string text;  // file contents, or link target
  std::shared_ptr<Block> block;
  VirtualFileFactory open;
};

struct VirtualOs::OpenFile {
  std::string path;
  std::shared_ptr<Node> node;        // null for a device fd made by add_fd
  std::shared_ptr<VirtualFile> dev;  // set for device nodes
  int flags;
  bool readable() const { return (flags & O_ACCMODE) != O_WRONLY; }
  bool writable() const { return (flags & O_ACCMODE) != O_RDONLY; }
};

VirtualOs::VirtualOs() { nodes_["/"] = std::make_shared<Node>(Node{Node::kDir, {}, {}, {}}); }
VirtualOs::~VirtualOs() {
  for (auto& [addr, m] : maps_)
    if (m.anonymous) ::munmap(reinterpret_cast<void*>(addr), m.len);
}

std::string VirtualOs::resolve(const std::string& path, bool follow_last, int& err) const {
  std::vector<std::string> todo = split(path);  // components still to walk, the next one at the back
  std::reverse(todo.begin(), todo.end());
  std::string cur;  // resolved so far; "" is the root
  err = 0;
  for (int links = 0; !todo.empty();) {
    std::string c = std::move(todo.back());
    todo.pop_back();
    if (c == ".") continue;
    if (c == "..") {
      cur.resize(cur.empty() ? 0 : cur.rfind('/'));
      continue;
    }
    std::string next = cur + "/" + c;
    auto it = nodes_.find(next);
    bool last = todo.empty();
    if (it == nodes_.end()) {
      if (!last) err = ENOENT;
      return next;
    }
    if (it->second->kind == Node::kLink && (follow_last || !last)) {
      if (++links > 40) return err = ELOOP, next;
      const std::string& t = it->second->text;
      std::vector<std::string> more = split(t);
      todo.insert(todo.end(), more.rbegin(), more.rend());
      if (t.starts_with('/')) cur.clear();
      continue;
    }
    if (!last && it->second->kind != Node::kDir) return err = ENOTDIR, next;
    cur = next;
  }
  return cur.empty() ? "/" : cur;
}

std::string VirtualOs::place(const std::string& path) {
  std::vector<std::string> parts = split(path);
  if (parts.empty()) throw Error("VirtualOs: cannot replace the root directory");
  std::string dir;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    int err;
    std::string r = resolve(dir + "/" + parts[i], true, err);
    if (err) throw Error("VirtualOs: cannot add " + path + ": " + sys::errno_name(err) + " at " + r);
    auto it = nodes_.find(r);
    if (it == nodes_.end()) nodes_[r] = std::make_shared<Node>(Node{Node::kDir, {}, {}, {}});
    else if (it->second->kind != Node::kDir) throw Error("VirtualOs: cannot add " + path + ": " + r + " is not a directory");
    dir = r == "/" ? "" : r;
  }
  return dir + "/" + parts.back();
}

void VirtualOs::add(const std::string& path, std::shared_ptr<Node> node) {
  std::lock_guard lock(mu_);
  nodes_[place(path)] = std::move(node);
}
void VirtualOs::add_dir(const std::string& path) { add(path, std::make_shared<Node>(Node{Node::kDir, {}, {}, {}})); }
void VirtualOs::add_file(const std::string& path, std::string contents) {
  add(path, std::make_shared<Node>(Node{Node::kFile, std::move(contents), {}, {}}));
}
void VirtualOs::add_symlink(const std::string& path, std::string target) {
  add(path, std::make_shared<Node>(Node{Node::kLink, std::move(target), {}, {}}));
}
std::span<uint8_t> VirtualOs::add_mmap_file(const std::string& path, size_t size) {
  auto b = std::make_shared<Block>(size);
  add(path, std::make_shared<Node>(Node{Node::kBlock, {}, b, {}}));
  return {b->p, size};
}
void VirtualOs::add_device(const std::string& path, VirtualFileFactory open) {
  add(path, std::make_shared<Node>(Node{Node::kDevice, {}, {}, std::move(open)}));
}
void VirtualOs::add_device(const std::string& path, std::shared_ptr<VirtualFile> file) {
  add_device(path, [file](int) { return file; });
}

void VirtualOs::remove(const std::string& path) {
  std::lock_guard lock(mu_);
  int err;
  std::string r = resolve(path, false, err);
  std::erase_if(nodes_, [&](const auto& kv) { return r != "/" && (kv.first == r || kv.first.starts_with(r + "/")); });
}

void VirtualOs::set_errno_on_open(const std::string& path, int err) {
  std::lock_guard lock(mu_);
  int e;
  std::string r = resolve(path, true, e);
  if (e) throw Error("VirtualOs: set_errno_on_open(" + path + "): a directory on the way is missing (" + sys::errno_name(e) + ")");
  if (err) open_errno_[r] = err;
  else open_errno_.erase(r);
}

int VirtualOs::add_fd(std::shared_ptr<VirtualFile> file, std::string name) {
  std::lock_guard lock(mu_);
  fds_[next_fd_] = std::make_shared<OpenFile>(OpenFile{std::move(name), nullptr, std::move(file), O_RDWR});
  return next_fd_++;
}

std::string VirtualOs::fd_path(int fd) const {
  std::lock_guard lock(mu_);
  auto it = fds_.find(fd);
  return it == fds_.end() ? "" : it->second->path;
}
std::shared_ptr<VirtualFile> VirtualOs::device_of(int fd) const {
  std::lock_guard lock(mu_);
  auto it = fds_.find(fd);
  return it == fds_.end() ? nullptr : it->second->dev;
}
size_t VirtualOs::open_fds() const {
  std::lock_guard lock(mu_);
  return fds_.size();
}
size_t VirtualOs::mappings() const {
  std::lock_guard lock(mu_);
  return maps_.size();
}

std::shared_ptr<VirtualOs::OpenFile> VirtualOs::file(int fd, const char* what) const {
  std::lock_guard lock(mu_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) throw_os_error(EBADF, std::string(what) + " on fd " + std::to_string(fd), "it is not open in this VirtualOs");
  return it->second;
}

int VirtualOs::open(const std::string& path, int flags) {
  auto f = std::make_shared<OpenFile>(OpenFile{path, nullptr, nullptr, flags});
  {
    std::lock_guard lock(mu_);
    int err;
    std::string r = resolve(path, true, err);
    if (!err && open_errno_.count(r)) err = open_errno_[r];
    auto it = nodes_.find(r);
    if (!err && it == nodes_.end()) {
      int perr;
      std::string parent = resolve(r.substr(0, r.rfind('/')), true, perr);
      auto p = nodes_.find(parent);
      if (!(flags & O_CREAT) || perr || p == nodes_.end() || p->second->kind != Node::kDir) err = ENOENT;
      else it = nodes_.emplace(r, std::make_shared<Node>(Node{Node::kFile, {}, {}, {}})).first;
    }
    if (!err && it->second->kind == Node::kDir && f->writable()) err = EISDIR;
    if (err) throw_os_error(err, "open " + path);
    f->node = it->second;
    if (f->node->kind == Node::kFile && (flags & O_TRUNC) && f->writable()) f->node->text.clear();
  }
  if (f->node->kind == Node::kDevice && !(f->dev = f->node->open(flags))) throw_os_error(ENXIO, "open " + path);
  std::lock_guard lock(mu_);
  fds_[next_fd_] = f;
  return next_fd_++;
}

void VirtualOs::close(int fd) {
  std::shared_ptr<OpenFile> f;  // released outside the lock: a VirtualFile's destructor may call back in
  std::lock_guard lock(mu_);
  if (auto it = fds_.find(fd); it != fds_.end()) f = std::move(it->second), fds_.erase(it);
  std::erase_if(locks_, [fd](const auto& l) { return l.second == fd; });
}

int VirtualOs::flock(int fd, int operation) {
  std::lock_guard lock(mu_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) return -EBADF;
  const std::string& path = it->second->path;
  if (operation & LOCK_UN) {
    if (auto l = locks_.find(path); l != locks_.end() && l->second == fd) locks_.erase(l);
    return 0;
  }
  auto [l, fresh] = locks_.try_emplace(path, fd);
  if (fresh || l->second == fd) return 0;
  return (operation & LOCK_NB) ? -EWOULDBLOCK : -EDEADLK;  // a blocking wait would never end in one process
}

int VirtualOs::ioctl(int fd, unsigned long request, void* arg) {
  std::shared_ptr<OpenFile> f;
  {
    std::lock_guard lock(mu_);
    auto it = fds_.find(fd);
    if (it == fds_.end()) return -EBADF;
    f = it->second;
  }
  return f->dev ? f->dev->ioctl(request, arg) : -ENOTTY;
}

void* VirtualOs::mmap(void* addr, size_t len, int prot, int flags, int fd, uint64_t offset) {
  std::string what = "mmap of " + std::to_string(len) + " bytes at offset " + std::to_string(offset) + " of ";
  if (!len || offset % kPage) throw_os_error(EINVAL, what + (fd < 0 ? "anonymous memory" : fd_path(fd)));
  // MAP_FIXED only over a range this VirtualOs mapped (the caller's reservation): anything else would
  // clobber memory of the process that the seam knows nothing about.
  auto check_fixed = [&](const std::string& target) {
    if (!(flags & MAP_FIXED)) return;
    std::lock_guard lock(mu_);
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    bool inside = false;
    for (const auto& [start, map] : maps_)  // not only the nearest: the reservation may hold fixed maps of its own
      inside = inside || (a >= start && a + len <= start + map.len);
    if (!inside) throw_os_error(EINVAL, what + target, "VirtualOs allows MAP_FIXED only inside a range it mapped (reserve it first)");
  };
  void* p = nullptr;
  Map m{len, false, nullptr};
  if (!(flags & MAP_ANONYMOUS)) {
    auto f = file(fd, "mmap");
    check_fixed(f->path);
    if (f->dev && (p = f->dev->map_pages(addr, offset, len, prot, flags))) {
      m.anonymous = true;
      m.keep = f->dev;
      std::lock_guard lock(mu_);
      maps_[reinterpret_cast<uintptr_t>(p)] = std::move(m);
      return p;
    }
    if (flags & MAP_FIXED) throw_os_error(EINVAL, what + f->path, "this file cannot be mapped at a fixed address");
  }
  if (flags & MAP_ANONYMOUS) {
    if (flags & MAP_HUGETLB) throw_os_error(ENOMEM, what + "anonymous memory", "VirtualOs has no hugepages");
    // MAP_FIXED_NOREPLACE never clobbers: it gives exactly `addr` or fails with EEXIST.
    check_fixed("anonymous memory");
    p = ::mmap(addr, len, prot, (flags & (MAP_SHARED | MAP_PRIVATE | MAP_NORESERVE | MAP_FIXED_NOREPLACE | MAP_FIXED)) | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw_os_error(errno, what + "anonymous memory");
    m.anonymous = true;
  } else {
    auto f = file(fd, "mmap");
    if (f->dev) {
      if (!(p = f->dev->mmap(offset, len, prot))) throw_os_error(ENODEV, what + f->path, "the emulated driver maps nothing there");
      m.keep = f->dev;
    } else if (f->node->kind == Node::kBlock) {
      size_t cap = (f->node->block->size + kPage - 1) / kPage * kPage;
      if (offset > cap || len > cap - offset) throw_os_error(EINVAL, what + f->path, "the mapping reaches past the end of the file");
      p = f->node->block->p + offset;
      m.keep = f->node->block;
    } else {
      throw_os_error(ENODEV, what + f->path, "only device nodes and mmap files can be mapped");
    }
  }
  std::lock_guard lock(mu_);
  maps_[reinterpret_cast<uintptr_t>(p)] = std::move(m);
  return p;
}

std::unique_ptr<sys::Mmio> VirtualOs::map_mmio(int fd, size_t len, uint64_t offset, const std::string& name) {
  auto f = file(fd, "mmap");
  if (f->dev)
    if (auto m = f->dev->mmio(offset, len, name)) return m;
  return Os::map_mmio(fd, len, offset, name);
}

void VirtualOs::munmap(void* addr, size_t) {
  std::lock_guard lock(mu_);
  auto it = maps_.find(reinterpret_cast<uintptr_t>(addr));
  if (it == maps_.end()) return;
  const size_t len = it->second.len;
  if (it->second.anonymous) ::munmap(addr, len);
  maps_.erase(it);
  // Fixed maps inside it went with it.
  maps_.erase(maps_.lower_bound(reinterpret_cast<uintptr_t>(addr)), maps_.lower_bound(reinterpret_cast<uintptr_t>(addr) + len));
}

size_t VirtualOs::pread(int fd, std::span<uint8_t> dst, uint64_t offset) {
  auto f = file(fd, "pread");
  std::string what = "pread of " + std::to_string(dst.size()) + " bytes at offset " + std::to_string(offset) + " of " + f->path;
  if (!f->readable()) throw_os_error(EBADF, what, "the file was opened write-only");
  if (f->dev) {
    long n = f->dev->pread(dst, offset);
    if (n < 0) throw_os_error(int(-n), what);
    return size_t(n);
  }
  std::lock_guard lock(mu_);
  std::span<const uint8_t> src;
  switch (f->node->kind) {
    case Node::kFile: src = {reinterpret_cast<const uint8_t*>(f->node->text.data()), f->node->text.size()}; break;
    case Node::kBlock: src = {f->node->block->p, f->node->block->size}; break;
    default: throw_os_error(EISDIR, what);
  }
  if (offset >= src.size()) return 0;
  size_t n = std::min(dst.size(), size_t(src.size() - offset));
  std::memcpy(dst.data(), src.data() + offset, n);
  return n;
}

size_t VirtualOs::pwrite(int fd, std::span<const uint8_t> src, uint64_t offset) {
  auto f = file(fd, "pwrite");
  std::string what = "pwrite of " + std::to_string(src.size()) + " bytes at offset " + std::to_string(offset) + " of " + f->path;
  if (!f->writable()) throw_os_error(EBADF, what, "the file was opened read-only");
  if (f->dev) {
    long n = f->dev->pwrite(src, offset);
    if (n < 0) throw_os_error(int(-n), what);
    return size_t(n);
  }
  std::lock_guard lock(mu_);
  if (f->node->kind == Node::kFile) {
    std::string& t = f->node->text;
    if (t.size() < offset + src.size()) t.resize(offset + src.size());
    std::memcpy(t.data() + offset, src.data(), src.size());
    return src.size();
  }
  if (f->node->kind != Node::kBlock) throw_os_error(EISDIR, what);
  Block& b = *f->node->block;
  if (offset >= b.size) return 0;
  size_t n = std::min(src.size(), size_t(b.size - offset));
  std::memcpy(b.p + offset, src.data(), n);
  return n;
}

std::string VirtualOs::read_file(const std::string& path) {
  sys::Fd fd(*this, path, O_RDONLY);
  std::string out;
  uint8_t buf[4096];
  while (size_t n = pread(fd.get(), buf, out.size())) out.append(reinterpret_cast<char*>(buf), n);
  return out;
}

void VirtualOs::write_file(const std::string& path, std::string_view contents) {
  sys::Fd fd(*this, path, O_WRONLY | O_TRUNC);
  if (pwrite(fd.get(), {reinterpret_cast<const uint8_t*>(contents.data()), contents.size()}, 0) != contents.size())
    throw_os_error(EIO, "write " + path + " (short write)");
}

std::vector<std::string> VirtualOs::listdir(const std::string& path) {
  std::lock_guard lock(mu_);
  int err;
  std::string r = resolve(path, true, err);
  auto it = nodes_.find(r);
  if (!err && it == nodes_.end()) err = ENOENT;
  if (!err && it->second->kind != Node::kDir) err = ENOTDIR;
  if (err) throw_os_error(err, "list directory " + path);
  std::string prefix = r == "/" ? "/" : r + "/";
  std::vector<std::string> names;
  for (auto c = nodes_.upper_bound(prefix); c != nodes_.end() && c->first.starts_with(prefix); ++c)
    if (c->first.find('/', prefix.size()) == std::string::npos) names.push_back(c->first.substr(prefix.size()));
  std::sort(names.begin(), names.end());
  return names;
}

bool VirtualOs::exists(const std::string& path) {
  std::lock_guard lock(mu_);
  int err;
  std::string r = resolve(path, true, err);
  return !err && nodes_.count(r);
}

std::string VirtualOs::readlink(const std::string& path) {
  std::lock_guard lock(mu_);
  int err;
  std::string r = resolve(path, false, err);
  auto it = nodes_.find(r);
  if (!err && it == nodes_.end()) err = ENOENT;
  if (!err && it->second->kind != Node::kLink) err = EINVAL;
  if (err) throw_os_error(err, "readlink " + path, err == EINVAL ? "it is not a symbolic link" : "");
  return it->second->text;
}

int VirtualOs::eventfd(unsigned initial, int flags) { return add_fd(std::make_shared<EventFile>(initial, flags & O_NONBLOCK), "eventfd"); }

}  // namespace ugpu::emu
