// Builds JSON text for machine-readable tool output (`spreplay inspect --json`).
//
// Strings are escaped per RFC 8259 and always come out as valid UTF-8: archive texts come from
// files and may hold any bytes, and one invalid byte would make the whole document unparseable,
// so each invalid sequence is replaced by U+FFFD instead.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spreplay {

// Appends JSON string syntax for `text`, quotes included.
void AppendJsonString(std::string_view text, std::string& out);

// Callers must produce a well-formed document: Key() only directly inside an object and before
// each of its values, every Begin matched by its End. Commas and indentation are handled here.
class JsonWriter {
 public:
  // indent == 0: compact, one line. Otherwise each element on its own line, indented this much
  // per nesting level.
  explicit JsonWriter(int indent = 0) : indent_(indent) {}

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Double(double value);
  // A value that is already valid JSON text (e.g. from Cap'n Proto's JSON codec).
  JsonWriter& Raw(std::string_view json);

  const std::string& text() const { return out_; }

 private:
  void BeforeValue();
  void Close(char bracket);
  void NewLine(size_t depth);

  int indent_;
  std::string out_;
  // One per open container: whether it already holds an element, to place commas.
  std::vector<bool> container_has_elements_;
  bool after_key_ = false;
};

}  // namespace spreplay
