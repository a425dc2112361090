// Tests for ParsePromQueryJson (prom_query.cc): the Prometheus HTTP API's JSON.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "ttft/prometheus.h"

namespace ttft {
namespace {

TEST(PromQueryJson, MatrixAndVector) {
  auto m = ParsePromQueryJson(
      R"({"status":"success","data":{"resultType":"matrix","result":[
        {"metric":{"__name__":"x_count","replica":"r0"},"values":[[1,"5"],[2,"NaN"]]}]}})");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->size(), 1u);
  ASSERT_EQ((*m)[0].points.size(), 2u);
  EXPECT_EQ((*m)[0].points[0].second, 5);
  auto v = ParsePromQueryJson(
      R"({"status":"success","data":{"resultType":"vector","result":[
        {"metric":{"__name__":"up"},"value":[3,"1"]}]}})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ((*v)[0].points[0].first, 3);
}

TEST(PromQueryJson, ErrorStatusCarriesPrometheusMessage) {
  auto r = ParsePromQueryJson(
      R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("bad_data: parse error at char 3"));
}

// Fields of the wrong JSON type are bad input, never an exception (the prom_query
// fuzzer found {"status": {...}}, which json::value() turned into std::terminate).
TEST(PromQueryJson, WrongTypesAreErrorsNotExceptions) {
  for (const char* body : {
           R"({"status":{"x":1},"data":{"resultType":"matrix","result":[]}})",
           R"({"status":"error","errorType":7,"error":["a"]})",
           R"({"status":"success","data":{"resultType":5,"result":[]}})",
           R"({"status":"success","data":{"resultType":"matrix","result":[{"values":7}]}})",
           R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1]}]}})",
       }) {
    auto r = ParsePromQueryJson(body);
    EXPECT_FALSE(r.ok()) << body;
  }
}

}  // namespace
}  // namespace ttft
