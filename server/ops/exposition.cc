#include "server/ops/exposition.h"

#include <charconv>
#include <cmath>

namespace server {

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::trunc(value) && std::fabs(value) < 9.007199254740992e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  // Shortest digits that read back exactly; plain decimals where they stay
  // short (bucket bounds read le="0.0005", as client libraries write them).
  const double magnitude = std::fabs(value);
  const auto format = magnitude >= 1e-6 && magnitude < 1e15 ? std::chars_format::fixed
                                                            : std::chars_format::general;
  char buf[128];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, format);
  return std::string(buf, ec == std::errc() ? end : buf);
}

void Exposition::Family(std::string_view name, std::string_view type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  // HELP text escapes backslash and newline (not quotes).
  for (char c : help) {
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_.push_back(c);
    }
  }
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void Exposition::Line(std::string_view name,
                      const std::vector<std::pair<std::string_view, std::string>>& labels,
                      std::string_view value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) out_ += ',';
      out_ += labels[i].first;
      out_ += "=\"";
      out_ += labels[i].second;
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += value;
  out_ += '\n';
}

void Exposition::Sample(std::string_view name, Labels labels, double value) {
  std::vector<std::pair<std::string_view, std::string>> escaped;
  for (const auto& [k, v] : labels) escaped.emplace_back(k, EscapeLabelValue(v));
  Line(name, escaped, FormatValue(value));
}

void Exposition::Sample(std::string_view name, Labels labels, uint64_t value) {
  std::vector<std::pair<std::string_view, std::string>> escaped;
  for (const auto& [k, v] : labels) escaped.emplace_back(k, EscapeLabelValue(v));
  Line(name, escaped, std::to_string(value));
}

}  // namespace server
