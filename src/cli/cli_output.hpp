// Output files that appear whole or not at all.
//
// An AtomicOutput writes to a temporary file made with mkstemp beside the
// destination (same directory, so same file system) and renames it into place
// only when the caller commits. Without `replace`, the rename refuses to
// replace a file (renameat2 with RENAME_NOREPLACE, or link + unlink where the
// file system lacks it), so a file that appeared while we worked is never
// clobbered. An output that is not committed - an error, an early return, an
// exception, SIGINT/SIGTERM/SIGHUP once install_signal_cleanup() ran - has its
// temporary file removed: a failed run leaves nothing behind.
//
// Error messages describe what went wrong with the output without naming it;
// the caller prints them after the destination's name.
#pragma once

#include <sys/stat.h>

#include <string>

namespace tandem::cli {

class AtomicOutput {
 public:
  AtomicOutput() = default;
  ~AtomicOutput() { discard(); }
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  // Creates the temporary file for `destination` (mode 0600 until
  // copy_metadata or set_default_mode). On failure returns false and says why in *error.
  bool open(const std::string& destination, std::string* error);

  // Read-write descriptor of the temporary file; -1 when not open.
  int fd() const { return fd_; }

  // Gives the file the permission bits, owner (where allowed) and access and
  // modification times of `from`. Call after the last write.
  bool copy_metadata(const struct stat& from, std::string* error);
  // Gives the file the mode a new file gets: 0666 less the umask.
  bool set_default_mode(std::string* error);
  // fsync()s the file.
  bool sync(std::string* error);

  // Closes the file and renames it to the destination. Without `replace`, fails
  // when the destination exists. The temporary file is gone afterwards
  // whatever happened.
  bool commit(bool replace, std::string* error);

  // Closes and removes the temporary file, if any.
  void discard();

 private:
  std::string destination_;
  std::string temp_path_;
  int fd_ = -1;
};

// Removes the temporary file of the live AtomicOutput when SIGINT, SIGTERM or
// SIGHUP arrives, then dies of the signal as before. Call once, early.
void install_signal_cleanup();

// fsync()s the directory that holds `path`, so a rename in it is durable.
// Best effort: errors are ignored.
void sync_parent_directory(const std::string& path);

// "<message>: <strerror(errno)>"
std::string errno_message(const std::string& message);

}  // namespace tandem::cli
