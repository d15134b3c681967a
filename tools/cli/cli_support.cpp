// cli_support.cpp: the usage-error helpers, the text table and the stderr progress line.
#include "cli_support.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "hardware/target_selection.hpp"

namespace metrale::cli {

const HardwareTarget& require_target(const std::vector<HardwareTarget>& targets, std::string_view name) {
  const HardwareTarget* target = find_target(targets, name);
  if (target == nullptr) {
    std::vector<std::string> names;
    names.reserve(targets.size());
    for (const auto& known : targets) {
      names.push_back(known.name);
    }
    throw UnknownTargetError(fmt::format("--target {}: no such target (known: {})", name, fmt::join(names, ", ")));
  }
  return *target;
}

void TextTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size()) {
    throw std::logic_error(fmt::format("table row has {} cells for {} columns", cells.size(), columns_.size()));
  }
  rows_.push_back(std::move(cells));
}

std::string TextTable::render() const {
  std::vector<std::size_t> widths;
  for (const auto& column : columns_) {
    widths.push_back(column.header.size());
  }
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  auto render_row = [&](auto cell_of) {
    std::string line;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      const std::string& cell = cell_of(i);
      const std::string pad(widths[i] - cell.size(), ' ');
      line += (i == 0 ? "" : "  ") + (columns_[i].right_aligned ? pad + cell : cell + pad);
    }
    line.erase(line.find_last_not_of(' ') + 1);
    return line + "\n";
  };
  std::string out = render_row([&](std::size_t i) -> const std::string& { return columns_[i].header; });
  for (const auto& row : rows_) {
    out += render_row([&](std::size_t i) -> const std::string& { return row[i]; });
  }
  return out;
}

Progress::Progress() : live_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (live_ && last_width_ > 0) {
    std::fputs(fmt::format("\r{}\r", std::string(last_width_, ' ')).c_str(), stderr);
  }
}

void Progress::step(std::string_view line) {
  if (!live_) {
    std::fputs(fmt::format("{}\n", line).c_str(), stderr);
    return;
  }
  const std::string pad(last_width_ > line.size() ? last_width_ - line.size() : 0, ' ');
  std::fputs(fmt::format("\r{}{}", line, pad).c_str(), stderr);
  std::fflush(stderr);
  last_width_ = line.size();
}

}  // namespace metrale::cli
