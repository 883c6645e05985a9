#include <cmath>
#include <limits>
#include <string>

#include "archive/json_writer.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

std::string Quoted(std::string_view text) {
  std::string out;
  AppendJsonString(text, out);
  return out;
}

TEST(ArchiveJsonWriterTest, EscapesWhatJsonRequires) {
  EXPECT_EQ(Quoted(""), R"("")");
  EXPECT_EQ(Quoted("plain text"), R"("plain text")");
  EXPECT_EQ(Quoted("a\"b\\c/d"), R"("a\"b\\c/d")");
  EXPECT_EQ(Quoted("\b\f\n\r\t"), R"("\b\f\n\r\t")");
  EXPECT_EQ(Quoted(std::string("\x00\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\x7f\"");
}

TEST(ArchiveJsonWriterTest, KeepsValidUtf8) {
  // 2-, 3- and 4-byte sequences at the edges of their ranges.
  for (const std::string_view text :
       {"\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEF\xBF\xBF", "\xF0\x90\x80\x80",
        "\xF4\x8F\xBF\xBF", "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"}) {
    EXPECT_EQ(Quoted(text), "\"" + std::string(text) + "\"");
  }
}

TEST(ArchiveJsonWriterTest, ReplacesInvalidUtf8) {
  const std::string replacement = "\xEF\xBF\xBD";
  EXPECT_EQ(Quoted("\xFF"), "\"" + replacement + "\"");
  EXPECT_EQ(Quoted("a\x80z"), "\"a" + replacement + "z\"");
  EXPECT_EQ(Quoted("\xC0\xAF"), "\"" + replacement + replacement + "\"");  // Overlong '/'.
  EXPECT_EQ(Quoted("\xE0\x80\xAF"), "\"" + replacement + replacement + replacement + "\"");
  EXPECT_EQ(Quoted("\xED\xA0\x80"), "\"" + replacement + replacement + replacement + "\"");
  EXPECT_EQ(Quoted("\xF4\x90\x80\x80"),
            "\"" + replacement + replacement + replacement + replacement + "\"");  // > U+10FFFF.
  EXPECT_EQ(Quoted("\xE2\x82"), "\"" + replacement + replacement + "\"");  // Cut short at end.
  EXPECT_EQ(Quoted("\xC3"), "\"" + replacement + "\"");
}

TEST(ArchiveJsonWriterTest, CompactDocument) {
  JsonWriter json;
  json.BeginObject();
  json.Key("a").Uint(1);
  json.Key("b").BeginArray().Int(-2).Bool(true).String("x").BeginObject().EndObject().EndArray();
  json.Key("c").BeginArray().EndArray();
  json.EndObject();
  EXPECT_EQ(json.text(), R"({"a":1,"b":[-2,true,"x",{}],"c":[]})");
}

TEST(ArchiveJsonWriterTest, NonFiniteDoublesBecomeNull) {
  JsonWriter json;
  json.BeginArray()
      .Double(1.5)
      .Double(std::nan(""))
      .Double(-std::numeric_limits<double>::infinity())
      .EndArray();
  EXPECT_EQ(json.text(), "[1.5,null,null]");
}

TEST(ArchiveJsonWriterTest, IndentedDocument) {
  JsonWriter json(2);
  json.BeginObject();
  json.Key("list").BeginArray().Uint(1).Uint(2).EndArray();
  json.Key("empty").BeginObject().EndObject();
  json.EndObject();
  EXPECT_EQ(json.text(), "{\n  \"list\": [\n    1,\n    2\n  ],\n  \"empty\": {}\n}");
}

}  // namespace
}  // namespace spreplay
