#include "recorder/trace_log.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace spreplay {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------------------------------------
// Helpers

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

// Deterministic pseudo-random bytes, so a test can recompute what a payload must contain.
std::vector<std::byte> PatternBytes(uint64_t seed, size_t size) {
  std::vector<std::byte> bytes(size);
  uint64_t state = seed;
  for (size_t i = 0; i < size; i += 8) {
    const uint64_t word = SplitMix64(state);
    std::memcpy(bytes.data() + i, &word, std::min<size_t>(8, size - i));
  }
  return bytes;
}

// A record that says who wrote it and in which order, with a body derived from both, so a
// reader can check it without knowing what was written.
struct RecordId {
  uint32_t writer;
  uint32_t sequence;
};

constexpr size_t kRecordIdSize = 12;  // writer, sequence, body size.

uint64_t BodySeed(RecordId id) { return (uint64_t{id.writer} << 32) | id.sequence; }

std::vector<std::byte> MakeRecord(RecordId id, size_t body_size) {
  std::vector<std::byte> record(kRecordIdSize);
  const uint32_t fields[3] = {id.writer, id.sequence, static_cast<uint32_t>(body_size)};
  std::memcpy(record.data(), fields, sizeof(fields));
  const std::vector<std::byte> body = PatternBytes(BodySeed(id), body_size);
  record.insert(record.end(), body.begin(), body.end());
  return record;
}

std::optional<RecordId> CheckRecord(std::span<const std::byte> record) {
  if (record.size() < kRecordIdSize) return std::nullopt;
  uint32_t fields[3];
  std::memcpy(fields, record.data(), sizeof(fields));
  const RecordId id{fields[0], fields[1]};
  if (record.size() != kRecordIdSize + fields[2]) return std::nullopt;
  const std::vector<std::byte> body = PatternBytes(BodySeed(id), fields[2]);
  if (!std::equal(body.begin(), body.end(), record.begin() + kRecordIdSize)) return std::nullopt;
  return id;
}

bool IsAligned(std::span<const std::byte> frame) {
  return reinterpret_cast<uintptr_t>(frame.data()) % kTraceFrameAlignment == 0;
}

uint64_t AlignedFrameSize(size_t payload_size) {
  return (kTraceFrameHeaderSize + payload_size + 7) / 8 * 8;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, std::string_view contents) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(contents.data(), contents.size());
}

void AppendToFile(const std::string& path, std::string_view contents) {
  std::ofstream(path, std::ios::binary | std::ios::app).write(contents.data(), contents.size());
}

std::string ValidHeader(uint32_t version) {
  std::string header = "SPRTRACE";
  for (uint32_t v : {version, 0u}) {
    for (int i = 0; i < 4; ++i) header += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  return header;
}

class TraceLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / "trace_log_test.XXXXXX");
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string PathFor(std::string_view name) const { return (dir_ / name).string(); }

  // Writes `payloads` through one writer and returns the file's path.
  std::string WriteTrace(std::string_view name,
                         const std::vector<std::vector<std::byte>>& payloads) {
    const std::string path = PathFor(name);
    absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(path);
    EXPECT_TRUE(writer.ok()) << writer.status();
    for (const auto& payload : payloads) {
      const absl::Status status = writer->Append(payload);
      EXPECT_TRUE(status.ok()) << status;
    }
    return path;
  }

  std::filesystem::path dir_;
};

// ---------------------------------------------------------------------------------------------
// Round trip and framing

TEST_F(TraceLogTest, RoundTripsPayloadsOfManySizes) {
  std::vector<size_t> sizes;
  for (size_t size = 0; size <= 300; ++size) sizes.push_back(size);
  for (size_t size : {1023, 4095, 4096, 4097, 65535, 65536, 65537, 69999, 70000}) {
    sizes.push_back(size);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 40; ++i)
    sizes.push_back(std::uniform_int_distribution<size_t>(0, 70000)(rng));

  std::vector<std::vector<std::byte>> payloads;
  uint64_t expected_file_size = kTraceFileHeaderSize;
  for (size_t i = 0; i < sizes.size(); ++i) {
    payloads.push_back(PatternBytes(i, sizes[i]));
    expected_file_size += AlignedFrameSize(sizes[i]);
  }
  const std::string path = WriteTrace("round_trip.trace", payloads);
  EXPECT_EQ(std::filesystem::file_size(path), expected_file_size);

  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->format_version, kTraceFormatVersion);
  EXPECT_TRUE(log->damage.empty()) << DescribeDamage(*log);
  ASSERT_EQ(log->frames.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    EXPECT_TRUE(IsAligned(log->frames[i])) << "frame " << i;
    ASSERT_TRUE(std::ranges::equal(log->frames[i], payloads[i])) << "frame " << i;
  }
  EXPECT_EQ(DescribeDamage(*log), fmt::format("{} records, no damage", payloads.size()));

  // Frames must survive moving the log, since they point into its buffer.
  TraceLog moved = *std::move(log);
  EXPECT_TRUE(std::ranges::equal(moved.frames.back(), payloads.back()));
}

TEST_F(TraceLogTest, WritesTheDocumentedLayout) {
  const std::string path = WriteTrace("layout.trace", {PatternBytes(1, 3)});
  const std::string bytes = ReadFile(path);
  ASSERT_EQ(bytes.size(), 16u + 16u + 8u);
  EXPECT_EQ(bytes.substr(0, 16), ValidHeader(kTraceFormatVersion));
  EXPECT_EQ(bytes.substr(16, 4), "SPRF");
  EXPECT_EQ(bytes.substr(20, 4), std::string("\x03\0\0\0", 4));
  EXPECT_EQ(bytes.substr(35, 5), std::string(5, '\0'));  // Padding after the 3-byte payload.
}

TEST_F(TraceLogTest, EmptyTraceHasHeaderAndNoFrames) {
  const std::string path = WriteTrace("empty.trace", {});
  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(log->frames.empty());
  EXPECT_TRUE(log->damage.empty());
}

TEST_F(TraceLogTest, ThreadsSharingOneWriterDoNotInterleave) {
  const std::string path = PathFor("threads.trace");
  absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(path);
  ASSERT_TRUE(writer.ok()) << writer.status();
  constexpr int kThreads = 4;
  constexpr uint32_t kRecordsPerThread = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&writer, t] {
      for (uint32_t seq = 0; seq < kRecordsPerThread; ++seq) {
        const RecordId id{static_cast<uint32_t>(t), seq};
        EXPECT_TRUE(writer->Append(MakeRecord(id, (seq * 997 + t * 31) % 5000)).ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();

  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(log->damage.empty()) << DescribeDamage(*log);
  std::map<uint32_t, uint32_t> next_sequence;
  for (auto frame : log->frames) {
    const std::optional<RecordId> id = CheckRecord(frame);
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ(id->sequence, next_sequence[id->writer]++);
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next_sequence[t], kRecordsPerThread);
}

// ---------------------------------------------------------------------------------------------
// Damage

TEST_F(TraceLogTest, EveryTruncationYieldsTheCompleteFramePrefix) {
  const std::vector<size_t> sizes = {0, 1, 5, 8, 13, 40};
  std::vector<std::vector<std::byte>> payloads;
  for (size_t i = 0; i < sizes.size(); ++i) payloads.push_back(PatternBytes(100 + i, sizes[i]));
  const std::string bytes = ReadFile(WriteTrace("full.trace", payloads));

  // Where each frame's payload ends, and where the next frame would start.
  std::vector<uint64_t> payload_end;
  std::vector<uint64_t> next_frame;
  uint64_t offset = kTraceFileHeaderSize;
  for (size_t size : sizes) {
    payload_end.push_back(offset + kTraceFrameHeaderSize + size);
    offset += AlignedFrameSize(size);
    next_frame.push_back(offset);
  }
  ASSERT_EQ(offset, bytes.size());

  for (size_t length = 0; length <= bytes.size(); ++length) {
    SCOPED_TRACE(fmt::format("truncated to {} bytes", length));
    absl::StatusOr<TraceLog> log = ParseTraceLog(bytes.substr(0, length));
    if (length < kTraceFileHeaderSize) {
      EXPECT_FALSE(log.ok());
      continue;
    }
    ASSERT_TRUE(log.ok()) << log.status();
    size_t complete = 0;
    while (complete < sizes.size() && payload_end[complete] <= length) ++complete;
    ASSERT_EQ(log->frames.size(), complete);
    for (size_t i = 0; i < complete; ++i) {
      EXPECT_TRUE(std::ranges::equal(log->frames[i], payloads[i]));
      EXPECT_TRUE(IsAligned(log->frames[i]));
    }
    const uint64_t intact_end = complete == 0 ? kTraceFileHeaderSize : next_frame[complete - 1];
    if (length <= intact_end) {
      EXPECT_TRUE(log->damage.empty()) << DescribeDamage(*log);
    } else {
      ASSERT_EQ(log->damage.size(), 1u);
      EXPECT_EQ(log->damage[0].offset, intact_end);
      EXPECT_EQ(log->damage[0].length, length - intact_end);
      EXPECT_EQ(log->damage[0].reason, "truncated final record (writer killed mid-write?)");
    }
  }
}

TEST_F(TraceLogTest, CorruptMiddleFrameLosesOnlyThatFrame) {
  std::vector<std::vector<std::byte>> payloads;
  for (size_t i = 0; i < 5; ++i) payloads.push_back(PatternBytes(200 + i, 50 + 10 * i));
  const std::string bytes = ReadFile(WriteTrace("corrupt.trace", payloads));
  uint64_t middle_offset = kTraceFileHeaderSize;
  for (size_t i = 0; i < 2; ++i) middle_offset += AlignedFrameSize(payloads[i].size());
  const uint64_t middle_size = kTraceFrameHeaderSize + payloads[2].size();  // Padding unchecked.

  for (uint64_t position = middle_offset; position < middle_offset + middle_size; ++position) {
    SCOPED_TRACE(fmt::format("byte {} flipped", position));
    std::string corrupt = bytes;
    corrupt[position] ^= 0x20;
    absl::StatusOr<TraceLog> log = ParseTraceLog(std::move(corrupt));
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_EQ(log->frames.size(), 4u);
    for (size_t read = 0, written = 0; read < 4; ++read, ++written) {
      if (written == 2) ++written;
      EXPECT_TRUE(std::ranges::equal(log->frames[read], payloads[written]));
    }
    ASSERT_EQ(log->damage.size(), 1u);
    EXPECT_EQ(log->damage[0].offset, middle_offset);
    EXPECT_EQ(log->damage[0].length, AlignedFrameSize(payloads[2].size()));
    EXPECT_THAT(DescribeDamage(*log), HasSubstr(fmt::format("at offset {}", middle_offset)));
    EXPECT_THAT(log->damage[0].reason, Not(HasSubstr("killed")));
  }
}

TEST_F(TraceLogTest, AppendingAfterATornFrameRealigns) {
  // A donor file supplies the bytes a writer killed mid-frame would leave behind.
  const std::string donor = ReadFile(WriteTrace("donor.trace", {PatternBytes(9, 100)}));
  for (size_t torn_length : {size_t{5}, size_t{16}, size_t{53}, size_t{56}}) {
    SCOPED_TRACE(fmt::format("torn frame of {} bytes", torn_length));
    const std::string path = PathFor(fmt::format("torn{}.trace", torn_length));
    std::vector<std::vector<std::byte>> expected;
    for (uint32_t i = 0; i < 3; ++i) expected.push_back(MakeRecord({1, i}, 30 * i));

    absl::StatusOr<TraceLogWriter> early_writer = TraceLogWriter::Open(path);
    ASSERT_TRUE(early_writer.ok()) << early_writer.status();
    for (const auto& record : expected) ASSERT_TRUE(early_writer->Append(record).ok());
    const uint64_t torn_offset = std::filesystem::file_size(path);
    AppendToFile(path, std::string_view(donor).substr(kTraceFileHeaderSize, torn_length));

    // Both a writer opened before the damage and one opened after must realign.
    expected.push_back(MakeRecord({1, 3}, 77));
    ASSERT_TRUE(early_writer->Append(expected.back()).ok());
    absl::StatusOr<TraceLogWriter> late_writer = TraceLogWriter::Open(path);
    ASSERT_TRUE(late_writer.ok()) << late_writer.status();
    expected.push_back(MakeRecord({1, 4}, 0));
    ASSERT_TRUE(late_writer->Append(expected.back()).ok());

    absl::StatusOr<TraceLog> log = ReadTraceLog(path);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_EQ(log->frames.size(), expected.size()) << DescribeDamage(*log);
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(std::ranges::equal(log->frames[i], expected[i])) << "frame " << i;
    }
    ASSERT_EQ(log->damage.size(), 1u);
    EXPECT_EQ(log->damage[0].offset, torn_offset);
    EXPECT_EQ(log->damage[0].length, (torn_length + 7) / 8 * 8);
    if (torn_length >= kTraceFrameHeaderSize) {
      EXPECT_THAT(log->damage[0].reason, HasSubstr("cut short by a later record"));
    }
  }
}

TEST_F(TraceLogTest, MutatedTracesNeverBreakTheReader) {
  std::vector<std::vector<std::byte>> payloads;
  for (size_t i = 0; i < 8; ++i) payloads.push_back(PatternBytes(300 + i, i * 37 % 200));
  const std::string bytes = ReadFile(WriteTrace("fuzz.trace", payloads));
  std::mt19937 rng(11);
  for (int round = 0; round < 3000; ++round) {
    std::string mutated = bytes;
    const int flips = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int i = 0; i < flips; ++i) {
      const size_t at = std::uniform_int_distribution<size_t>(0, mutated.size() - 1)(rng);
      mutated[at] = static_cast<char>(rng());
    }
    if (round % 3 == 0) {
      mutated.resize(std::uniform_int_distribution<size_t>(0, mutated.size())(rng));
    }
    const uintptr_t size = mutated.size();
    absl::StatusOr<TraceLog> log = ParseTraceLog(std::move(mutated));
    if (!log.ok()) continue;
    const auto begin = reinterpret_cast<uintptr_t>(log->bytes.data());
    for (auto frame : log->frames) {
      const auto start = reinterpret_cast<uintptr_t>(frame.data());
      ASSERT_GE(start, begin + 2 * kTraceFrameHeaderSize);
      ASSERT_LE(start + frame.size(), begin + size);
      ASSERT_TRUE(IsAligned(frame));
    }
    uint64_t previous_end = kTraceFileHeaderSize;
    for (const Damage& damage : log->damage) {
      ASSERT_GE(damage.offset, previous_end);
      ASSERT_LE(damage.offset + damage.length, size);
      previous_end = damage.offset + damage.length;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Files that are not (usable) traces

TEST_F(TraceLogTest, MissingFileIsNotFound) {
  const std::string path = PathFor("nope.trace");
  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(log.status().message(), HasSubstr(path));
  EXPECT_THAT(log.status().message(), HasSubstr("does not exist"));
}

TEST_F(TraceLogTest, EmptyFileIsAnError) {
  const std::string path = PathFor("empty.bin");
  WriteFile(path, "");
  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_FALSE(log.ok());
  EXPECT_THAT(log.status().message(), HasSubstr(path + " is empty"));
}

TEST_F(TraceLogTest, ShortFileIsTruncated) {
  const std::string path = PathFor("short.trace");
  WriteFile(path, ValidHeader(kTraceFormatVersion).substr(0, 10));
  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(log.status().message(),
              HasSubstr(path + " is truncated: 10 bytes, a spreplay trace has at least 16"));
}

TEST_F(TraceLogTest, ForeignFileIsNotATrace) {
  const std::string path = PathFor("picture.gif");
  WriteFile(path, std::string("GIF89a\x01\x00\x02\x00 and more image bytes", 30));
  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(log.status().message(), HasSubstr(path + " is not a spreplay trace"));
  EXPECT_THAT(log.status().message(), HasSubstr("\"GIF89a..\""));
  EXPECT_THAT(log.status().message(), HasSubstr("47 49 46 38 39 61 01 00"));

  // Short foreign files are named as foreign, not as truncated traces.
  WriteFile(path, "hi");
  log = ReadTraceLog(path);
  ASSERT_FALSE(log.ok());
  EXPECT_THAT(log.status().message(), HasSubstr("is not a spreplay trace (starts with \"hi\""));
}

TEST_F(TraceLogTest, OlderFormatAsksForANewRecording) {
  const std::string path = PathFor("past.trace");
  WriteFile(path, ValidHeader(kTraceFormatVersion - 1) + std::string(16, '\0'));
  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(log.status().message(),
              AllOf(HasSubstr(path), HasSubstr("recorded by an older spreplay"),
                    HasSubstr(fmt::format("trace format {}", kTraceFormatVersion - 1)),
                    HasSubstr("record it again")));
  // Appending would mix keys of two schemes in one trace.
  absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(path);
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().message(), HasSubstr("refusing to append"));
}

TEST_F(TraceLogTest, NewerFormatIsRefused) {
  const std::string path = PathFor("future.trace");
  WriteFile(path, ValidHeader(kTraceFormatVersion + 1) + std::string(16, '\0'));
  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_FALSE(log.ok());
  EXPECT_THAT(log.status().message(),
              HasSubstr(fmt::format(
                  "{} was written by a newer spreplay: trace format {}, this build reads up to {}",
                  path, kTraceFormatVersion + 1, kTraceFormatVersion)));

  absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(path);
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().message(), HasSubstr("refusing to append"));
}

TEST_F(TraceLogTest, WriterRefusesForeignFilesAndLeavesThemAlone) {
  const std::string path = PathFor("notes.txt");
  const std::string contents = "precious notes, not a trace\n";
  WriteFile(path, contents);
  absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(path);
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(writer.status().message(),
              HasSubstr("refusing to append to " + path + ": it is not a spreplay trace"));
  EXPECT_EQ(ReadFile(path), contents);

  WriteFile(path, "SPRT");
  writer = TraceLogWriter::Open(path);
  ASSERT_FALSE(writer.ok());
  EXPECT_THAT(writer.status().message(), HasSubstr("too few for a trace header"));
}

// ---------------------------------------------------------------------------------------------
// Several processes, and processes killed mid-write

// Runs `body` in a forked child that exits with body's result, skipping the parent's atexit
// handlers and gtest state.
pid_t ForkChild(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

TEST_F(TraceLogTest, ConcurrentProcessesNeverInterleave) {
  const std::string path = PathFor("concurrent.trace");
  constexpr uint32_t kWriters = 4;
  constexpr uint32_t kRecordsPerWriter = 300;
  // Children block on this pipe until all exist, so their appends really overlap.
  int start_gate[2];
  ASSERT_EQ(::pipe(start_gate), 0);

  std::vector<pid_t> children;
  for (uint32_t writer_id = 0; writer_id < kWriters; ++writer_id) {
    children.push_back(ForkChild([&, writer_id] {
      ::close(start_gate[1]);
      char unused;
      (void)::read(start_gate[0], &unused, 1);
      absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(path);
      if (!writer.ok()) return 2;
      std::mt19937 rng(writer_id);
      std::uniform_int_distribution<size_t> body_size(0, 20 * 1024 - kRecordIdSize);
      for (uint32_t seq = 0; seq < kRecordsPerWriter; ++seq) {
        if (!writer->Append(MakeRecord({writer_id, seq}, body_size(rng))).ok()) return 3;
      }
      return 0;
    }));
    ASSERT_GT(children.back(), 0);
  }
  ::close(start_gate[0]);
  ::close(start_gate[1]);
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }

  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE(log->damage.empty()) << DescribeDamage(*log);
  ASSERT_EQ(log->frames.size(), kWriters * kRecordsPerWriter);
  std::map<uint32_t, uint32_t> next_sequence;
  for (auto frame : log->frames) {
    const std::optional<RecordId> id = CheckRecord(frame);
    ASSERT_TRUE(id.has_value()) << "a record came back altered";
    ASSERT_EQ(id->sequence, next_sequence[id->writer]++) << "writer " << id->writer;
  }
  for (uint32_t writer_id = 0; writer_id < kWriters; ++writer_id) {
    EXPECT_EQ(next_sequence[writer_id], kRecordsPerWriter);
  }
}

TEST_F(TraceLogTest, KilledWritersLeaveAReadablePrefix) {
  const std::string path = PathFor("killed.trace");
  constexpr uint32_t kRounds = 20;
  // Caps the file size should a child outrun its kill; it then idles until killed.
  constexpr uint32_t kMaxRecordsPerRound = 2000;
  std::mt19937 rng(std::random_device{}());

  for (uint32_t round = 0; round < kRounds; ++round) {
    const pid_t child = ForkChild([&path, round] {
      absl::StatusOr<TraceLogWriter> writer = TraceLogWriter::Open(path);
      if (!writer.ok()) return 2;
      std::mt19937 child_rng(round);
      // Log-uniform sizes up to 64 KiB: large records make kills mid-write likely, many small
      // ones keep the file small.
      std::uniform_real_distribution<double> log_size(0, std::log(64.0 * 1024 - kRecordIdSize));
      for (uint32_t seq = 0; seq < kMaxRecordsPerRound; ++seq) {
        const auto body_size = static_cast<size_t>(std::exp(log_size(child_rng)));
        if (!writer->Append(MakeRecord({round, seq}, body_size)).ok()) return 3;
      }
      while (true) ::pause();
    });
    ASSERT_GT(child, 0);
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(1000, 20000)(rng)));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child ended on its own with status " << status;
  }

  absl::StatusOr<TraceLog> log = ReadTraceLog(path);
  ASSERT_TRUE(log.ok()) << log.status();
  // Every record verifies, rounds follow each other, and within a round sequence numbers run
  // 0..k without holes: a kill only ever loses the record being written.
  std::map<uint32_t, uint32_t> records_per_round;
  uint32_t last_round = 0;
  for (auto frame : log->frames) {
    const std::optional<RecordId> id = CheckRecord(frame);
    ASSERT_TRUE(id.has_value()) << "a record came back altered";
    ASSERT_GE(id->writer, last_round) << "rounds appear out of order";
    last_round = id->writer;
    ASSERT_EQ(id->sequence, records_per_round[id->writer]++) << "hole in round " << id->writer;
  }
  // At most one torn record per killed writer, and nothing beyond it is lost.
  EXPECT_LE(log->damage.size(), kRounds);
  for (const Damage& damage : log->damage) {
    EXPECT_LE(damage.length, AlignedFrameSize(64 * 1024)) << damage.reason;
  }
  std::cout << "[   INFO   ] " << log->bytes.size() << " bytes, " << records_per_round.size()
            << " rounds wrote records; " << DescribeDamage(*log) << "\n";
}

}  // namespace
}  // namespace spreplay
