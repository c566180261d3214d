// Child-process helpers of the lab tests that run real `fabemu` processes (test_agent_process.cpp,
// test_lab_run.cpp).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace fabemu::lab::proc {

struct Child {
  pid_t pid = -1;
  int stdout_fd = -1;  // a pipe when no stdout file was given
};

// Starts args[0] (a path) with `args`; its stdout goes to `stdout_file`, or to a pipe (Child::stdout_fd)
// when that is empty; its stderr to `stderr_file`, or this process's when that is empty.
inline Child spawn(const std::vector<std::string>& args, const std::string& stdout_file = {},
                   const std::string& stderr_file = {}) {
  int pipe_fds[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdout_file.empty()) {
    if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  if (!stderr_file.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Child child;
  const int rc = posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (pipe_fds[1] >= 0) ::close(pipe_fds[1]);
  if (rc != 0) throw std::runtime_error("posix_spawn failed");
  child.stdout_fd = pipe_fds[0];
  return child;
}

// One line of `fd` (without the newline), or what was read when `timeout` passed or the pipe closed.
inline std::string read_line(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char c = 0;
    if (::read(fd, &c, 1) != 1) break;
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

// Exit status (128 + signal when killed), or -1 when the child is still running after `timeout`.
inline int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  do {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (std::chrono::steady_clock::now() < deadline);
  return -1;
}

}  // namespace fabemu::lab::proc
