//===- StepProfileTest.cpp - The step profile's arithmetic and table ------===//

#include "fa/train/StepProfile.h"

#include "fa/runtime/Error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace fa::train {
namespace {

std::array<double, kPhaseCount> phases(double attentionForward, double matmul,
                                       double optimizer) {
  std::array<double, kPhaseCount> ms{};
  ms[static_cast<int>(Phase::AttentionForward)] = attentionForward;
  ms[static_cast<int>(Phase::Matmul)] = matmul;
  ms[static_cast<int>(Phase::Optimizer)] = optimizer;
  return ms;
}

/// The table's and the JSON's phase names, in Phase order.
const std::vector<std::string> kPhaseNames = {"attention fwd",
                                              "attention bwd",
                                              "layernorm fwd+bwd",
                                              "matmul (cuBLASLt)",
                                              "embedding",
                                              "heads layout",
                                              "bias grad",
                                              "gelu",
                                              "residual",
                                              "elementwise (other)",
                                              "loss (cross-entropy)",
                                              "optimizer (norm, AdamW)",
                                              "communication"};

/// One step's phases: `ms[i]` for phase i.
std::array<double, kPhaseCount> everyPhase(double first, double increment) {
  std::array<double, kPhaseCount> ms{};
  for (int i = 0; i < kPhaseCount; ++i)
    ms[i] = first + increment * i;
  return ms;
}

const ProfileRow &row(const ProfileSummary &summary, Phase phase) {
  return summary.phases[static_cast<int>(phase)];
}

/// The line of `table` that starts (after its indent) with `name`.
std::string lineOf(const std::string &table, const std::string &name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  " + name + " ", 0) == 0)
      return line;
  return "";
}

TEST(StepProfile, AveragesStepsAndTakesIdleAsTheRest) {
  ProfileTotals totals;
  totals.tokensPerStep = 1000;
  totals.addStep(phases(1, 4, 1), 0, false, 10);
  totals.addStep(phases(3, 6, 1), 0, false, 30);
  ProfileSummary summary = summarizeProfile(totals);
  EXPECT_EQ(summary.steps, 2);
  EXPECT_DOUBLE_EQ(summary.wall.msPerStep, 20);
  EXPECT_DOUBLE_EQ(summary.wall.percentOfStep, 100);
  EXPECT_DOUBLE_EQ(row(summary, Phase::AttentionForward).msPerStep, 2);
  EXPECT_DOUBLE_EQ(row(summary, Phase::Matmul).msPerStep, 5);
  EXPECT_DOUBLE_EQ(row(summary, Phase::Matmul).percentOfStep, 25);
  EXPECT_DOUBLE_EQ(row(summary, Phase::Optimizer).msPerStep, 1);
  EXPECT_DOUBLE_EQ(row(summary, Phase::Communication).msPerStep, 0);
  EXPECT_DOUBLE_EQ(summary.phaseSumMsPerStep, 8);
  EXPECT_DOUBLE_EQ(summary.idle.msPerStep, 12);
  EXPECT_DOUBLE_EQ(summary.idle.percentOfStep, 60);
  EXPECT_EQ(summary.overshootMsPerStep, 0);
  EXPECT_FALSE(summary.overlappedCommunication);
  // 2000 tokens in 40 ms.
  EXPECT_DOUBLE_EQ(summary.tokensPerSecond, 50000);
}

TEST(StepProfile, ClampsIdleAtZeroAndFlagsIt) {
  ProfileTotals totals;
  totals.addStep(phases(2, 8, 1), 0, false, 10);
  ProfileSummary summary = summarizeProfile(totals);
  EXPECT_EQ(summary.idle.msPerStep, 0);
  EXPECT_DOUBLE_EQ(summary.overshootMsPerStep, 1);
  std::string table = formatProfileTable(summary, "steps 1-1");
  EXPECT_NE(lineOf(table, "idle/other").find(" !"), std::string::npos) << table;
  EXPECT_NE(table.find("the phases sum to 1.000 ms/step more than the wall "
                       "time; idle/other clamped to 0"),
            std::string::npos)
      << table;
  EXPECT_TRUE(nlohmann::json::parse(profileJson(summary))["idle_clamped"]);
}

TEST(StepProfile, OverlappedCommunicationIsReportedBesideTheSum) {
  ProfileTotals totals;
  totals.addStep(phases(1, 2, 1), 3, true, 10);
  ProfileSummary summary = summarizeProfile(totals);
  ASSERT_TRUE(summary.overlappedCommunication);
  EXPECT_DOUBLE_EQ(summary.overlappedCommunication->msPerStep, 3);
  // Not in the sum, not taken from idle.
  EXPECT_DOUBLE_EQ(summary.phaseSumMsPerStep, 4);
  EXPECT_DOUBLE_EQ(summary.idle.msPerStep, 6);
  std::string table = formatProfileTable(summary, "steps 11-30");
  EXPECT_NE(lineOf(table, "communication (overlapped)").find(" *"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("* on the communication stream"), std::string::npos);
}

TEST(StepProfile, TableHasARowPerPhaseThenIdleAndWall) {
  ProfileTotals totals;
  totals.addStep(phases(1.5, 2.25, 0.5), 0, false, 8);
  std::string table =
      formatProfileTable(summarizeProfile(totals), "steps 11-30");
  EXPECT_EQ(table.rfind("step profile: steps 11-30 (1 step)", 0), 0u) << table;
  EXPECT_NE(table.find("ms/step"), std::string::npos);
  EXPECT_NE(table.find("% of step"), std::string::npos);
  for (int i = 0; i < kPhaseCount; ++i)
    EXPECT_NE(lineOf(table, phaseName(static_cast<Phase>(i))), "")
        << phaseName(static_cast<Phase>(i)) << " missing from\n"
        << table;
  EXPECT_NE(lineOf(table, "matmul (cuBLASLt)").find("2.250"),
            std::string::npos);
  EXPECT_NE(lineOf(table, "matmul (cuBLASLt)").find("28.1%"), std::string::npos)
      << table;
  EXPECT_NE(lineOf(table, "idle/other").find("3.750"), std::string::npos);
  EXPECT_NE(lineOf(table, "step (wall)").find("8.000"), std::string::npos);
  EXPECT_NE(lineOf(table, "step (wall)").find("100.0%"), std::string::npos);
  EXPECT_EQ(lineOf(table, "communication (overlapped)"), "");
  EXPECT_EQ(table.find(" !"), std::string::npos);
  // Phases come before idle, idle before the wall.
  EXPECT_LT(table.find("attention fwd"), table.find("idle/other"));
  EXPECT_LT(table.find("idle/other"), table.find("step (wall)"));
}

TEST(StepProfile, PhasesAreNamedInOrder) {
  ASSERT_EQ(kPhaseNames.size(), static_cast<std::size_t>(kPhaseCount));
  for (int i = 0; i < kPhaseCount; ++i)
    EXPECT_EQ(phaseName(static_cast<Phase>(i)), kPhaseNames[i]) << i;
  EXPECT_EQ(phaseName(Phase::Embedding), std::string("embedding"));
  EXPECT_EQ(phaseName(Phase::HeadsLayout), std::string("heads layout"));
  EXPECT_EQ(phaseName(Phase::BiasGrad), std::string("bias grad"));
  EXPECT_EQ(phaseName(Phase::Gelu), std::string("gelu"));
  EXPECT_EQ(phaseName(Phase::Residual), std::string("residual"));
  EXPECT_EQ(phaseName(Phase::ElementwiseOther),
            std::string("elementwise (other)"));
}

TEST(StepProfile, EveryPhaseHasItsOwnRowAndSum) {
  // Phase i takes 0.125 * (i + 1) ms: every row's value is its own.
  ProfileTotals totals;
  totals.addStep(everyPhase(0.125, 0.125), 0, false, 20);
  ProfileSummary summary = summarizeProfile(totals);
  ASSERT_EQ(summary.phases.size(), static_cast<std::size_t>(kPhaseCount));
  double sum = 0;
  for (int i = 0; i < kPhaseCount; ++i) {
    EXPECT_EQ(summary.phases[i].name, kPhaseNames[i]);
    EXPECT_DOUBLE_EQ(summary.phases[i].msPerStep, 0.125 * (i + 1));
    sum += 0.125 * (i + 1);
  }
  EXPECT_DOUBLE_EQ(summary.phaseSumMsPerStep, sum);
  EXPECT_DOUBLE_EQ(summary.idle.msPerStep, 20 - sum);

  // The table: one row per phase, in Phase order, each with its value.
  std::string table = formatProfileTable(summary, "steps 11-11");
  std::size_t previous = 0;
  for (int i = 0; i < kPhaseCount; ++i) {
    std::string line = lineOf(table, kPhaseNames[i]);
    ASSERT_NE(line, "") << kPhaseNames[i] << " missing from\n" << table;
    char value[32];
    std::snprintf(value, sizeof value, " %.3f ", 0.125 * (i + 1));
    EXPECT_NE(line.find(value), std::string::npos) << line;
    std::size_t at = table.find("\n  " + kPhaseNames[i] + " ");
    EXPECT_GT(at, previous) << kPhaseNames[i] << " out of order in\n" << table;
    previous = at;
  }
  EXPECT_LT(previous, table.find("idle/other"));

  // The JSON: the same names and values.
  auto json = nlohmann::json::parse(profileJson(summary));
  ASSERT_EQ(json["phases"].size(), static_cast<std::size_t>(kPhaseCount));
  for (int i = 0; i < kPhaseCount; ++i) {
    ASSERT_TRUE(json["phases"].contains(kPhaseNames[i])) << kPhaseNames[i];
    EXPECT_DOUBLE_EQ(json["phases"][kPhaseNames[i]]["ms_per_step"],
                     0.125 * (i + 1));
  }
  EXPECT_DOUBLE_EQ(json["phase_sum_ms_per_step"], sum);
}

TEST(StepProfile, JsonNamesEveryPhase) {
  ProfileTotals totals;
  totals.addStep(phases(1, 2, 1), 0, false, 10);
  auto json = nlohmann::json::parse(profileJson(summarizeProfile(totals)));
  EXPECT_EQ(json["steps"], 1);
  EXPECT_EQ(json["phases"].size(), static_cast<std::size_t>(kPhaseCount));
  EXPECT_DOUBLE_EQ(json["phases"]["matmul (cuBLASLt)"]["ms_per_step"], 2);
  EXPECT_DOUBLE_EQ(json["idle_ms_per_step"], 6);
  EXPECT_DOUBLE_EQ(json["wall_ms_per_step"], 10);
  EXPECT_FALSE(json["idle_clamped"]);
}

TEST(StepProfile, RefusesAnEmptyProfile) {
  EXPECT_THROW(summarizeProfile(ProfileTotals{}), Error);
}

TEST(StepProfile, WindowSkipsWarmupSteps) {
  StepWindow window = profileWindow(0, 40, 20);
  EXPECT_EQ(window.begin, 10);
  EXPECT_EQ(window.end, 30);
  EXPECT_TRUE(window.contains(10));
  EXPECT_TRUE(window.contains(29));
  EXPECT_FALSE(window.contains(9));
  EXPECT_FALSE(window.contains(30));
  // The run ends first.
  EXPECT_EQ(profileWindow(0, 25, 20).end, 25);
  // Short runs: after half of them; never empty.
  EXPECT_EQ(profileWindow(0, 6, 20).begin, 3);
  EXPECT_EQ(profileWindow(0, 6, 20).size(), 3);
  EXPECT_EQ(profileWindow(0, 1, 20).size(), 1);
  // A resumed run counts from where it resumed.
  EXPECT_EQ(profileWindow(100, 200, 5).begin, 110);
  EXPECT_EQ(profileWindow(100, 200, 5).end, 115);
  EXPECT_EQ(profileWindow(7, 7, 5).size(), 0);
  EXPECT_THROW(profileWindow(0, 10, 0), Error);
}

TEST(StepProfile, PhaseNamesAreDistinct) {
  for (int i = 0; i < kPhaseCount; ++i)
    for (int j = i + 1; j < kPhaseCount; ++j)
      EXPECT_STRNE(phaseName(static_cast<Phase>(i)),
                   phaseName(static_cast<Phase>(j)));
}

} // namespace
} // namespace fa::train
