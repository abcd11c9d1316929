// Temporary files renamed into place; see cli_output.hpp.
#include "cli/cli_output.hpp"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace tandem::cli {

namespace {

// The temporary file the signal handler removes. Files are processed one at a
// time, so there is at most one.
char g_temp_path[PATH_MAX];
volatile sig_atomic_t g_temp_live = 0;

void remember_temp(const std::string& path) {
  g_temp_live = 0;
  if (path.size() >= sizeof g_temp_path) return;
  memcpy(g_temp_path, path.c_str(), path.size() + 1);
  g_temp_live = 1;
}

void forget_temp() { g_temp_live = 0; }

extern "C" void on_fatal_signal(int sig) {
  if (g_temp_live) unlink(g_temp_path);
  // SA_RESETHAND restored the default action; the signal is delivered again
  // when the handler returns and ends the process as it would have.
  raise(sig);
}

std::string parent_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

std::string errno_message(const std::string& message) { return message + ": " + strerror(errno); }

bool AtomicOutput::open(const std::string& destination, std::string* error) {
  discard();
  destination_ = destination;
  const std::filesystem::path dest(destination);
  std::string temp_name = ".";
  temp_name += dest.filename().string();
  temp_name += ".tandem-XXXXXX";
  std::string name = (dest.parent_path() / temp_name).string();
  const int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) {
    *error = errno_message("cannot create a temporary file beside it");
    return false;
  }
  fd_ = fd;
  temp_path_ = name;
  remember_temp(temp_path_);
  return true;
}

bool AtomicOutput::copy_metadata(const struct stat& from, std::string* error) {
  // Ownership first: chown may clear set-user-ID bits that fchmod then sets.
  // Only root may give a file away; the group is kept where we belong to it.
  if (fchown(fd_, from.st_uid, from.st_gid) != 0) (void)!fchown(fd_, static_cast<uid_t>(-1), from.st_gid);
  if (fchmod(fd_, from.st_mode & 07777) != 0) {
    *error = errno_message("cannot set its permissions");
    return false;
  }
  const struct timespec times[2] = {from.st_atim, from.st_mtim};
  if (futimens(fd_, times) != 0) {
    *error = errno_message("cannot set its times");
    return false;
  }
  return true;
}

bool AtomicOutput::set_default_mode(std::string* error) {
  const mode_t mask = umask(0);  // the only way to read it; restored at once
  umask(mask);
  if (fchmod(fd_, 0666 & ~mask) != 0) {
    *error = errno_message("cannot set its permissions");
    return false;
  }
  return true;
}

bool AtomicOutput::sync(std::string* error) {
  if (fsync(fd_) != 0) {
    *error = errno_message("cannot sync it to disk");
    return false;
  }
  return true;
}

bool AtomicOutput::commit(bool replace, std::string* error) {
  if (fd_ < 0) {
    *error = "internal error: commit without an open file";
    return false;
  }
  const int fd = fd_;
  fd_ = -1;
  if (close(fd) != 0) {  // NFS reports some write errors only here
    *error = errno_message("write failed");
    discard();
    return false;
  }
  const char* temp = temp_path_.c_str();
  const char* dest = destination_.c_str();
  int rc = 0;
  if (replace) {
    rc = rename(temp, dest);
  } else {
    rc = renameat2(AT_FDCWD, temp, AT_FDCWD, dest, RENAME_NOREPLACE);
    if (rc != 0 && (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP)) {
      // The file system cannot rename without replacing; link() never replaces.
      rc = link(temp, dest);
      if (rc == 0) unlink(temp);
    }
  }
  if (rc != 0) {
    *error = errno == EEXIST ? "already exists (use -f to overwrite)"
                             : errno_message("cannot rename the temporary file into place");
    discard();
    return false;
  }
  forget_temp();
  temp_path_.clear();
  return true;
}

void AtomicOutput::discard() {
  if (fd_ >= 0) {
    close(fd_);
    fd_ = -1;
  }
  if (!temp_path_.empty()) {
    unlink(temp_path_.c_str());
    forget_temp();
    temp_path_.clear();
  }
}

void install_signal_cleanup() {
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // e.g. under nohup
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, nullptr);
  }
}

void sync_parent_directory(const std::string& path) {
  const int fd = ::open(parent_directory(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)fsync(fd);
  close(fd);
}

}  // namespace tandem::cli
