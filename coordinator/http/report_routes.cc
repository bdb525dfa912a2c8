// POST /v1/reports and POST /v1/reports/batch (docs/API.md, "Reports").
#include <functional>
#include <string_view>
#include <utility>

#include "config.h"
#include "connection_pool.h"
#include "coordinator_api.h"
#include "hotkey/report.h"
#include "hotkey/report_batch.h"
#include "metrics.h"
#include "responses.h"
#include "routes.h"

namespace hotkey::coordinator {
namespace {

// One decoded report (or the reason it was refused) through the coordinator: the answer's status
// and JSON body, shared by the single and the batch form.
// `wire`: the report's binary encoding as received (empty for JSON), which a report for another
// member's topic is forwarded as.
std::pair<int, api::Json> ingest_one(const RouteContext& ctx,
                                     const std::function<Report(const ReportLimits&)>& decode,
                                     std::string_view wire = {}) {
  // The decoders count the items before parsing them: a report over max_items costs no more than
  // reading up to its first extra item, and gets its own 413 (LimitError).
  Report report;
  try {
    report = decode(ctx.cfg.limits);
  } catch (const LimitError& e) {
    ctx.metrics.rejected("too_many_items");
    return {413, api::Error{std::string("report too large: ") + e.what(), ""}};
  } catch (const DecodeError& e) {
    ctx.metrics.rejected("decode");
    return {400, api::Error{std::string("bad report: ") + e.what(), ""}};
  }
  const std::string topic = report.topic;
  CallResult r = ctx.reports.submit_report(std::move(report), wire);
  if (!r.ok()) return {http_status(r), error_body(r)};
  return {200, api::ReportResult{r.duplicate, ctx.reads.list_version(topic)}};
}

void unsupported_type(const RouteContext& ctx, httplib::Response& res, const std::string& ct,
                      std::string_view binary_type) {
  ctx.metrics.rejected("content_type");
  send_error(res, 415,
             "Content-Type must be application/json or " + std::string(binary_type) + ", got '" +
                 ct + "'");
}

void post_report(const RouteContext& ctx, Call& c) {
  const std::string ct = c.req.get_header_value("Content-Type");
  const std::string media = media_type(ct);
  std::pair<int, api::Json> answer;
  if (media == kReportBinaryContentType) {
    answer = ingest_one(
        ctx, [&](const ReportLimits& lim) { return decode_report_binary(c.req.body, lim); },
        c.req.body);
  } else if (media.empty() || media == "application/json") {
    answer = ingest_one(
        ctx, [&](const ReportLimits& lim) { return parse_report_json(c.req.body, lim); });
  } else {
    return unsupported_type(ctx, c.res, ct, kReportBinaryContentType);
  }
  send_json(c.res, answer.first, answer.second);
}

// A producer's whole round in one request: each report is ingested on its own and gets its own
// result, so one bad report does not reject the others (docs/API.md).
void post_report_batch(const RouteContext& ctx, Call& c) {
  const std::string ct = c.req.get_header_value("Content-Type");
  api::Json results = api::Json::array();
  try {
    const std::string media = media_type(ct);
    if (media == kReportBatchBinaryContentType) {
      for (std::string_view one : split_report_batch_binary(c.req.body)) {
        auto [status, body] = ingest_one(
            ctx, [&](const ReportLimits& lim) { return decode_report_binary(one, lim); }, one);
        body["status"] = status;
        results.push_back(std::move(body));
      }
    } else if (media.empty() || media == "application/json") {
      for (const std::string& one : split_report_batch_json(c.req.body)) {
        auto [status, body] =
            ingest_one(ctx, [&](const ReportLimits& lim) { return parse_report_json(one, lim); });
        body["status"] = status;
        results.push_back(std::move(body));
      }
    } else {
      return unsupported_type(ctx, c.res, ct, kReportBatchBinaryContentType);
    }
  } catch (const DecodeError& e) {  // the envelope itself: nothing was ingested
    ctx.metrics.rejected("decode");
    return send_error(c.res, 400, std::string("bad report batch: ") + e.what());
  }
  send_json(c.res, 200, api::Json{{"results", std::move(results)}});
}

}  // namespace

void add_report_routes(Routes& routes, const RouteContext& ctx) {
  Admission report;
  report.rate = RateScope::kReports;
  report.auth = Auth::kProducer;
  report.body = BodyKind::kReport;
  report.binary_media = kReportBinaryContentType;
  routes.push_back({"POST", "/v1/reports", report, [ctx](Call& c) { post_report(ctx, c); }});
  report.binary_media = kReportBatchBinaryContentType;
  routes.push_back(
      {"POST", "/v1/reports/batch", report, [ctx](Call& c) { post_report_batch(ctx, c); }});
}

}  // namespace hotkey::coordinator
