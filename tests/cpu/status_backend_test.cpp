// Status codes, their names and messages, backends and the version: the
// small permanent parts of the public API.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "support/test_support.hpp"
#include "tandem/tandem.hpp"

namespace {

using tandem::StatusCode;

const StatusCode kAllCodes[] = {
    StatusCode::ok,           StatusCode::bad_data,          StatusCode::output_too_small,
    StatusCode::unsupported,  StatusCode::io_error,          StatusCode::device_error,
    StatusCode::invalid_argument, StatusCode::checksum_mismatch, StatusCode::truncated,
    StatusCode::out_of_memory, StatusCode::output_limit,     StatusCode::no_device,
    StatusCode::not_found,
};

TEST(Status, NumericValuesArePermanent) {
  EXPECT_EQ(static_cast<int>(StatusCode::ok), 0);
  EXPECT_EQ(static_cast<int>(StatusCode::bad_data), 1);
  EXPECT_EQ(static_cast<int>(StatusCode::output_too_small), 2);
  EXPECT_EQ(static_cast<int>(StatusCode::unsupported), 3);
  EXPECT_EQ(static_cast<int>(StatusCode::io_error), 4);
  EXPECT_EQ(static_cast<int>(StatusCode::device_error), 5);
  EXPECT_EQ(static_cast<int>(StatusCode::invalid_argument), 6);
  EXPECT_EQ(static_cast<int>(StatusCode::checksum_mismatch), 7);
  EXPECT_EQ(static_cast<int>(StatusCode::truncated), 8);
  EXPECT_EQ(static_cast<int>(StatusCode::out_of_memory), 9);
  EXPECT_EQ(static_cast<int>(StatusCode::output_limit), 10);
  EXPECT_EQ(static_cast<int>(StatusCode::no_device), 11);
  EXPECT_EQ(static_cast<int>(StatusCode::not_found), 12);
}

TEST(Status, NamesAndMessages) {
  std::set<std::string> names, messages;
  for (StatusCode c : kAllCodes) {
    const char* name = tandem::status_name(c);
    const char* msg = tandem::status_message(c);
    ASSERT_NE(name, nullptr);
    ASSERT_NE(msg, nullptr);
    EXPECT_GT(std::strlen(name), 0u);
    EXPECT_GT(std::strlen(msg), 0u);
    names.insert(name);
    messages.insert(msg);
    EXPECT_STREQ(msg, tandem_status_message(static_cast<tandem_status>(c))) << "C and C++ agree";
  }
  EXPECT_EQ(names.size(), std::size(kAllCodes)) << "names are distinct";
  EXPECT_EQ(messages.size(), std::size(kAllCodes)) << "messages are distinct";
  EXPECT_STREQ(tandem::status_name(StatusCode::bad_data), "bad_data");
  EXPECT_STREQ(tandem::status_name(StatusCode::output_limit), "output_limit");
  // Out-of-range values still get a string.
  EXPECT_NE(tandem::status_message(static_cast<StatusCode>(999)), nullptr);
  EXPECT_NE(tandem::status_name(static_cast<StatusCode>(-1)), nullptr);
}

TEST(Status, ToStringCarriesTheReason) {
  const tandem::Status plain(StatusCode::truncated);
  EXPECT_FALSE(plain.ok());
  EXPECT_FALSE(static_cast<bool>(plain));
  EXPECT_NE(plain.to_string().find(tandem::status_message(StatusCode::truncated)), std::string::npos);
  const tandem::Status why(StatusCode::bad_data, "block size exceeds the frame's maximum");
  const std::string s = why.to_string();
  EXPECT_NE(s.find("block size exceeds the frame's maximum"), std::string::npos) << s;
  EXPECT_NE(s.find(tandem::status_message(StatusCode::bad_data)), std::string::npos) << s;
  EXPECT_TRUE(tandem::Status().ok());
}

TEST(Backend, NamesParseAndResolve) {
  for (auto b : {tandem::Backend::cpu, tandem::Backend::gpu, tandem::Backend::automatic}) {
    tandem::Backend parsed{};
    ASSERT_TRUE(tandem::parse_backend(tandem::backend_name(b), &parsed)) << tandem::backend_name(b);
    EXPECT_EQ(parsed, b);
  }
  EXPECT_STREQ(tandem::backend_name(tandem::Backend::automatic), "auto");
  tandem::Backend b{};
  EXPECT_FALSE(tandem::parse_backend("", &b));
  EXPECT_FALSE(tandem::parse_backend("GPU ", &b));
  EXPECT_FALSE(tandem::parse_backend("tpu", &b));
  EXPECT_STREQ(tandem::codec_name(tandem::Codec::lz4), "lz4");

  tandem::Backend resolved{};
  ASSERT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, tandem::Backend::cpu, &resolved), StatusCode::ok);
  EXPECT_EQ(resolved, tandem::Backend::cpu);
  ASSERT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, tandem::Backend::automatic, &resolved),
                StatusCode::ok);
  EXPECT_NE(resolved, tandem::Backend::automatic);
  const tandem::BackendInfo info = tandem::backend_info();
  if (info.gpu_count == 0) {
    EXPECT_EQ(resolved, tandem::Backend::cpu) << "auto falls back to the CPU without a GPU";
    EXPECT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, tandem::Backend::gpu, &resolved),
                  StatusCode::no_device);
  } else {
    EXPECT_EQ(resolved, tandem::Backend::gpu) << "auto may use the GPU when there is one";
    ASSERT_STATUS(tandem::resolve_backend(tandem::Codec::lz4, tandem::Backend::gpu, &resolved), StatusCode::ok);
    EXPECT_EQ(resolved, tandem::Backend::gpu);
  }
  if (!info.cuda_compiled) EXPECT_EQ(info.gpu_count, 0);
  EXPECT_GE(tandem::hardware_threads(), 1);
}

TEST(Version, MatchesTheCHeader) {
  ASSERT_NE(tandem::version(), nullptr);
  EXPECT_STREQ(tandem::version(), tandem_version());
  const std::string v = tandem::version();
  EXPECT_EQ(std::count(v.begin(), v.end(), '.'), 2) << v;
}

}  // namespace
