#include "server/api/tag_bodies.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "server/api/json_body.h"

namespace server {
namespace {

using nlohmann::json;

bool Fail(BodyError* error, const std::string& field, const std::string& what) {
  return RefuseBody(error, ApiError::kInvalidField, field + ": " + what);
}

// A key of a labels-like map; `field` names the map.
bool CheckKey(const std::string& key, const std::string& field, BodyError* error) {
  const size_t chars = Utf8Chars(key);
  if (chars < 1 || chars > kMaxLabelKeyChars) {
    return Fail(error, field,
                "keys must be 1 to " + std::to_string(kMaxLabelKeyChars) + " characters long");
  }
  // Not the key itself in the message: it holds the NUL.
  if (HasNul(key)) return Fail(error, field, "keys " + std::string(kNoNul));
  // A list's ?label=KEY:VALUE splits at the first ':', so such a key
  // could be stored but never matched.
  if (key.find(':') != std::string::npos) {
    return Fail(error, field, "keys must not contain ':' (?label=KEY:VALUE)");
  }
  return true;
}

// A value of a labels-like map; `field` names the entry ("labels.gpu").
bool CheckValue(const json& value, const std::string& field, BodyError* error) {
  if (!value.is_string()) return Fail(error, field, "must be a string");
  const std::string& s = value.get_ref<const std::string&>();
  if (Utf8Chars(s) > kMaxLabelValueChars) {
    return Fail(error, field,
                "must be at most " + std::to_string(kMaxLabelValueChars) + " characters long");
  }
  if (HasNul(s)) return Fail(error, field, kNoNul);
  return true;
}

bool CheckMap(const json& value, const std::string& field, const char* what, BodyError* error) {
  if (!value.is_object()) return Fail(error, field, "must be an object of strings");
  if (value.size() > kMaxLabels) {
    return Fail(error, field, "at most " + std::to_string(kMaxLabels) + " " + what);
  }
  for (const auto& [key, entry] : value.items()) {
    if (!CheckKey(key, field, error)) return false;
  }
  return true;
}

}  // namespace

bool ParseTags(const json& value, const std::string& field, const char* what, std::string* out,
               BodyError* error) {
  if (!CheckMap(value, field, what, error)) return false;
  for (const auto& [key, entry] : value.items()) {
    if (!CheckValue(entry, field + "." + key, error)) return false;
  }
  // nlohmann's object is a std::map: the keys come out sorted.
  *out = value.dump();
  return true;
}

bool ParseSelector(const json& value, std::vector<store::SelectorTerm>* out, BodyError* error) {
  const std::string field = "selector";
  if (!value.is_object()) {
    return Fail(error, field, "must be an object of strings or arrays of strings");
  }
  if (!CheckMap(value, field, "keys", error)) return false;
  out->clear();
  size_t values = 0;
  for (const auto& [key, entry] : value.items()) {
    const std::string at = field + "." + key;
    store::SelectorTerm term{key, {}};
    if (entry.is_array()) {
      if (entry.empty()) return Fail(error, at, "must hold at least one value");
      for (size_t i = 0; i < entry.size(); ++i) {
        if (!CheckValue(entry[i], at + "[" + std::to_string(i) + "]", error)) return false;
        term.values.push_back(entry[i].get<std::string>());
      }
    } else {
      if (!CheckValue(entry, at, error)) return false;
      term.values.push_back(entry.get<std::string>());
    }
    std::sort(term.values.begin(), term.values.end());
    term.values.erase(std::unique(term.values.begin(), term.values.end()), term.values.end());
    values += term.values.size();
    if (values > kMaxSelectorValues) {
      return Fail(error, field,
                  "at most " + std::to_string(kMaxSelectorValues) + " values in all");
    }
    out->push_back(std::move(term));
  }
  return true;
}

}  // namespace server
