// One topic's operations alone (coordinator/core/topic.h): no Coordinator, store, board or
// placement. Each operation changes the topic and returns what the caller must store or
// publish; these tests read that answer and the topic's views.
#include "topic.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/reports.h"

namespace hotkey::coordinator {
namespace {

using test_support::make_report;

// What the topic counted through its metrics.
struct Counted {
  int reports = 0;
  int list_changes = 0;
  uint64_t published_version = 0;
};

class CountingMetrics final : public TopicMetrics {
 public:
  explicit CountingMetrics(std::shared_ptr<Counted> c) : c_(std::move(c)) {}
  void report_accepted(double) override { ++c_->reports; }
  void list_published(uint64_t version, const std::vector<HotKey>&) override {
    c_->published_version = version;
  }
  void list_changed() override { ++c_->list_changes; }
  void rate(double) override {}
  void measured(double, double) override {}
  void predicted_skew(double) override {}
  void producers(size_t, uint64_t, uint64_t) override {}

 private:
  std::shared_ptr<Counted> c_;
};

constexpr int32_t kPartitions = 12;

class TopicTest : public ::testing::Test {
 protected:
  TopicTest() : registry_(16, 100000) {
    config_.warmup_ms = 0;
    config_.defaults.min_rate = 1;
  }

  // A topic "t" with version counter `version`, created at `now_ms`, with kPartitions.
  std::shared_ptr<Topic> make_topic(uint64_t version = 0, int64_t now_ms = 1000) {
    auto t = std::make_shared<Topic>("t", config_, std::make_unique<CountingMetrics>(counted_),
                                     version, now_ms);
    registry_.add(t, kPartitions);
    return t;
  }

  // `producer`'s report `seq` of 10,000 records, `hot_share` of them on key "hot".
  static Report report(const std::string& producer, uint64_t seq, double hot_share = 0.0,
                       uint64_t list_version = 0) {
    std::map<std::string, uint64_t> counts;
    const auto hot = static_cast<uint64_t>(10000 * hot_share);
    if (hot > 0) counts["hot"] = hot;
    for (int i = 0; i < 100; ++i) counts["cold-" + std::to_string(i)] = (10000 - hot) / 100;
    Report r = make_report(producer, "t", kPartitions, seq, counts);
    r.list_version = list_version;
    return r;
  }

  Ingested ingest(TopicLock& t, const Report& r, int64_t now_ms) {
    return t->ingest(r, scaled_report_sketch(r), settings(), now_ms);
  }

  const TopicSettings& settings() const { return config_.settings_for("t"); }

  CoordinatorConfig config_;
  TopicRegistry registry_;
  std::shared_ptr<Counted> counted_ = std::make_shared<Counted>();
};

TEST_F(TopicTest, AReportIsCountedOnceAndARestartedProducerCountsAgain) {
  auto topic = make_topic();
  TopicLock t(*topic);
  EXPECT_FALSE(ingest(t, report("p1", 1), 1000).duplicate);
  EXPECT_TRUE(ingest(t, report("p1", 1), 1001).duplicate) << "seq 1 retried right after seq 1";
  EXPECT_FALSE(ingest(t, report("p1", 2), 1002).duplicate);
  EXPECT_TRUE(ingest(t, report("p1", 2), 1003).duplicate);
  EXPECT_FALSE(ingest(t, report("p1", 1), 1004).duplicate) << "seq 1 after 2: a restart";
  EXPECT_EQ(counted_->reports, 3);
  EXPECT_EQ(t->summary(settings()).producers, 1u);
  EXPECT_EQ(t->last_active_ms(), 1004);
}

TEST_F(TopicTest, AFleetAheadOfEveryIssuedVersionAsksForAPlanAboveIt) {
  auto topic = make_topic(/*version=*/5);
  TopicLock t(*topic);
  Ingested in = ingest(t, report("p1", 1, 0.0, /*list_version=*/9), 1000);
  EXPECT_TRUE(in.wake && in.enqueue);
  EXPECT_TRUE(t->replan_wanted());
  EXPECT_EQ(t->reported_version(), 9u);
  EXPECT_EQ(t->known_version(), 9u);
  EXPECT_EQ(t->next_version(0), 10u);
  EXPECT_EQ(t->next_version(20), 21u) << "the placement's floor wins when higher";
  // A version at the end of the range is not adopted as a floor.
  ingest(t, report("p1", 2, 0.0, kMaxAdoptedVersion), 1001);
  EXPECT_EQ(t->reported_version(), 9u);
}

TEST_F(TopicTest, ASurgeAsksForAPlanAndTheFleetsEvidenceEndsItsHoldEarly) {
  auto topic = make_topic();
  TopicLock t(*topic);
  ingest(t, report("p1", 1), 1000);
  ingest(t, report("p2", 1), 1000);
  ASSERT_FALSE(t->replan_wanted()) << "a cold topic asks for nothing";
  Ingested first = ingest(t, report("p1", 2, 0.9), 2000);
  EXPECT_TRUE(first.wake && first.enqueue);
  EXPECT_TRUE(t->replan_wanted());
  // A triggered plan just ran: the next waits its hold ...
  t->hold_triggered(2000, /*hold_ms=*/250, /*floor_ms=*/15);
  EXPECT_EQ(t->triggered_wait(2000), 250);
  // ... until a second producer's report shows the surge too: then only its floor.
  Ingested second = ingest(t, report("p2", 2, 0.9), 2001);
  EXPECT_TRUE(second.wake);
  EXPECT_FALSE(second.enqueue) << "already waiting for a plan";
  EXPECT_EQ(t->triggered_wait(2000), 15);
  EXPECT_EQ(t->triggered_wait(2015), 0);
}

TEST_F(TopicTest, APlanChangesTheTopicOnlyWhenCommittedAndPublishesItsVersion) {
  auto topic = make_topic();
  TopicLock t(*topic);
  for (uint64_t seq = 1; seq <= 3; ++seq) {
    ingest(t, report("p1", seq, 0.9), 1000 + static_cast<int64_t>(seq));
    ingest(t, report("p2", seq, 0.9), 1000 + static_cast<int64_t>(seq));
  }
  PlanRequest req;
  req.settings = &settings();
  req.now_ms = 1100;
  req.epoch_ms = static_cast<int64_t>(config_.epoch_ms);
  req.owner = false;
  EXPECT_FALSE(t->plan(req).plan) << "only the owner plans";
  req.owner = true;
  Planned planned = t->plan(req);
  ASSERT_TRUE(planned.plan);
  ASSERT_TRUE(planned.plan->material);
  ASSERT_EQ(planned.plan->list.keys.size(), 1u);
  EXPECT_EQ(planned.plan->list.keys[0].key, "hot");
  EXPECT_FALSE(t->replan_wanted()) << "the plan answers the surge's request";
  // Not committed (the caller's store write failed): nothing of the plan is the topic's.
  EXPECT_EQ(t->version(), 0u);
  EXPECT_EQ(t->published(), nullptr);
  EXPECT_EQ(counted_->list_changes, 0);

  const uint64_t version = t->next_version(0);
  HotKeyList before = t->commit(planned, req, /*material=*/true, version);
  EXPECT_TRUE(before.keys.empty());
  EXPECT_EQ(t->version(), 1u);
  EXPECT_EQ(counted_->list_changes, 1);
  planned.plan->list.version = version;
  auto pub = std::make_shared<PublishedList>(
      PublishedList{planned.plan->list, list_to_json(planned.plan->list)});
  t->published_as(pub);
  EXPECT_EQ(t->published_version(), 1u);
  EXPECT_EQ(counted_->published_version, 1u);
  EXPECT_EQ(t->summary(settings()).hot_keys, 1u);
}

TEST_F(TopicTest, ExpiredPinsLeaveWithTheirAuditEntriesAndTheOthersStay) {
  auto topic = make_topic();
  TopicLock t(*topic);
  StoredTopic st;
  st.pins["gone"] = Pin{"gone", 4, 500, "sale", "alice", 0};
  st.pins["forever"] = Pin{"forever", 4, 0, "vip", "alice", 0};
  st.pins["later"] = Pin{"later", 4, 5000, "sale", "bob", 0};
  EXPECT_FALSE(t->load(std::move(st), 100)) << "no list stored: nothing to publish";
  StoreBatch none;
  EXPECT_FALSE(t->expire_pins(400, none));
  EXPECT_TRUE(none.empty());

  StoreBatch batch;
  std::optional<std::map<std::string, Pin>> left = t->expire_pins(1000, batch);
  ASSERT_TRUE(left);
  EXPECT_EQ(left->size(), 2u);
  EXPECT_TRUE(left->contains("forever") && left->contains("later"));
  ASSERT_EQ(batch.audits().size(), 1u);
  EXPECT_EQ(batch.audits()[0].action, "pin_expired");
  EXPECT_EQ(batch.audits()[0].key, "gone");
  EXPECT_EQ(t->pins().size(), 3u) << "the topic's pins change only with the committed plan";
}

TEST_F(TopicTest, UnstampedAuditsWaitForTheListThatShowsTheirChange) {
  auto topic = make_topic();
  TopicLock t(*topic);
  const auto entry = [](const std::string& action, const std::string& key) {
    AuditEntry a;
    a.action = action;
    a.topic = "t";
    a.key = key;
    return a;
  };
  t->keep_unstamped({entry("pin", "k1"), entry("policy_add", "p/"), entry("deny", "k2")});
  EXPECT_EQ(topic->unstamped(), 2u) << "only pins, unpins, denies and allows wait for a list";

  HotKeyList shows_pin;
  shows_pin.topic = "t";
  shows_pin.version = 7;
  HotKey k1;
  k1.key = "k1";
  k1.source = KeySource::kPinned;
  shows_pin.keys.push_back(k1);
  StoreBatch stamped = t->stamp_audits(shows_pin);
  EXPECT_FALSE(stamped.empty());
  EXPECT_EQ(topic->unstamped(), 1u);
  ASSERT_EQ(t->unstamped_audits().size(), 1u);
  EXPECT_EQ(t->unstamped_audits()[0].key, "k2");

  HotKeyList shows_deny = shows_pin;
  shows_deny.version = 8;
  shows_deny.denied.push_back("k2");
  EXPECT_FALSE(t->stamp_audits(shows_deny).empty());
  EXPECT_EQ(topic->unstamped(), 0u);
}

TEST_F(TopicTest, ReleaseForgetsWhatTheOwnerKnewAndKeepsTheOperatorsState) {
  auto topic = make_topic();
  TopicLock t(*topic);
  StoredTopic st;
  st.version = 4;
  st.pins["vip"] = Pin{"vip", 4, 0, "vip", "alice", 0};
  HotKeyList list;
  list.topic = "t";
  list.version = 4;
  list.partitions = kPartitions;
  HotKey vip;
  vip.key = "vip";
  vip.source = KeySource::kPinned;
  list.keys.push_back(vip);
  st.list = list;
  std::optional<HotKeyList> to_publish = t->load(std::move(st), 100);
  ASSERT_TRUE(to_publish);
  t->published_as(std::make_shared<PublishedList>(PublishedList{*to_publish, ""}));
  ingest(t, report("p1", 1), 1000);
  ASSERT_EQ(t->summary(settings()).producers, 1u);

  t->release(config_);
  EXPECT_EQ(t->published(), nullptr);
  EXPECT_EQ(t->summary(settings()).producers, 0u);
  EXPECT_EQ(t->pins().size(), 1u);
  EXPECT_EQ(t->version(), 4u) << "the counter stays: a later owner here publishes above it";
  EXPECT_EQ(t->partitions(), kPartitions);
  EXPECT_FALSE(t->untouched());
}

TEST_F(TopicTest, RetireMarksTheTopicRemovedForEveryHolderOfAReference) {
  auto topic = make_topic();
  std::shared_ptr<Topic> held = registry_.find("t");
  ASSERT_EQ(held, topic);
  {
    TopicLock t(*topic);
    EXPECT_FALSE(t->untouched()) << "it has partitions";
    registry_.resize(t, 0, false);
    EXPECT_TRUE(t->untouched());
    t.retire();
  }
  EXPECT_TRUE(held->removed());
  EXPECT_EQ(registry_.find("t"), nullptr) << "a removed topic is not found";
  EXPECT_EQ(registry_.tracked_partitions(), 0u);
}

}  // namespace
}  // namespace hotkey::coordinator
