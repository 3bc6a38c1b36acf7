#include "server/api/container_routes.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "server/api/errors.h"
#include "server/api/list_pages.h"
#include "server/api/list_query.h"
#include "server/api/refusals.h"
#include "server/api/reply_bodies.h"
#include "server/api/reply_on_io.h"
#include "server/api/request_bodies.h"

namespace server {
namespace {

using store::Outcome;

}  // namespace

ContainerRoutes::ContainerRoutes(store::Storage* storage, boost::asio::any_io_executor io,
                                 ReaderPool* readers, const CursorKey* cursor_key,
                                 bool writes_off_io)
    : storage_(storage),
      io_(std::move(io)),
      readers_(readers),
      cursor_key_(cursor_key),
      writes_off_io_(writes_off_io) {}

template <typename Call>
void ContainerRoutes::Submit(const Reply& reply, Call call) {
  if (writes_off_io_) return CallOffIo(readers_, io_, reply, std::move(call));
  call();
}

void ContainerRoutes::AddRoutes(Router* router) {
  using http::verb;
  // Each route calls its member function straight: no hop between.
  const auto bind = [this](auto fn) { return std::bind_front(fn, this); };
  router->Add(verb::post, "/v1/containers", Access::kAdmin, bind(&ContainerRoutes::Register));
  router->Add(verb::get, "/v1/containers", Access::kAdmin,
              bind(&ContainerRoutes::ListContainers));
  // A container key may read the containers it may report (its agent asks
  // whether its container is still picked); GetContainer checks the id.
  router->Add(verb::get, "/v1/containers/{id}", Access::kContainer,
              bind(&ContainerRoutes::GetContainer));
  router->Add(verb::delete_, "/v1/containers/{id}", Access::kAdmin,
              bind(&ContainerRoutes::Remove));
  router->Add(verb::post, "/v1/containers/{id}/drain", Access::kAdmin,
              bind(&ContainerRoutes::Drain));
  router->Add(verb::post, "/v1/containers/{id}/undrain", Access::kAdmin,
              bind(&ContainerRoutes::Undrain));
}

void ContainerRoutes::Register(RouteRequest req, Reply reply) {
  std::vector<store::ContainerSpec> specs;
  BodyError error;
  if (!ParseRegistration(req.http.body(), &specs, &error)) return reply(BodyErrorResponse(error));
  if (specs.empty()) return reply(JsonResponse(200, "{\"registered\":0}"));
  store::ContainerCallback done = [io = io_, reply, id = req.RequestId()](
                                      store::ContainerResult r) {
    ReplyOnIo(io, reply, [r = std::move(r), id] {
      if (r.outcome != Outcome::kOk) return OutcomeResponse(r.outcome, r.message, id);
      return JsonResponse(200, "{\"registered\":" + std::to_string(r.count) + "}");
    });
  };
  Submit(reply, [storage = storage_, specs = std::move(specs), done = std::move(done)]() mutable {
    storage->Register(std::move(specs), std::move(done));
  });
}

void ContainerRoutes::ListContainers(RouteRequest req, Reply reply) {
  store::ContainerFilter filter;
  if (auto refused = ReadRegionPoolFilter(req, &filter.region, &filter.pool)) {
    return reply(std::move(*refused));
  }
  if (req.QueryParam("status", &filter.status) && !filter.status.empty() &&
      filter.status != "available" && filter.status != "picked" && filter.status != "draining" &&
      filter.status != "dead") {
    return reply(RefusalResponse(kUnknownContainerStatus));
  }
  // One attribute a request, as a session list's label.
  if (req.QueryParamCount("attribute") > 1) return reply(RefusalResponse(kOneAttributeOnly));
  std::string attribute;
  BodyError error;
  if (req.QueryParam("attribute", &attribute) &&
      !ParseLabelFilter(attribute, &filter.attribute_key, &filter.attribute_value, &error,
                        "attribute")) {
    return reply(BodyErrorResponse(error));
  }
  // The attribute's presence is part of the query, as the label's.
  const uint64_t fingerprint = ListFingerprint(
      {"containers", filter.region, filter.pool, filter.status,
       filter.attribute_key.empty() ? "" : "attribute", filter.attribute_key,
       filter.attribute_value});
  int limit = 0;
  std::string after;
  if (auto refused = ReadPageParams(req, *cursor_key_, fingerprint, &limit, &after)) {
    return reply(std::move(*refused));
  }
  filter.page_budget_bytes = kListPageBudgetBytes;  // as ListSessions
  ReadListPage<store::ContainerInfo>(
      readers_, TenantReads(req.who.tenant), io_, reply, cursor_key_, fingerprint, req.RequestId(),
      "containers",
      [storage = storage_, filter = std::move(filter), after = std::move(after), limit](
          std::vector<store::ContainerInfo>* page, std::string* next_after) {
        return storage->ListContainers(filter, after, limit, page, next_after);
      },
      ContainerJson);
}

void ContainerRoutes::GetContainer(RouteRequest req, Reply reply) {
  if (!req.who.MayReport(req.params[0])) {
    return reply(ErrorResponse(ApiError::kForbidden,
                               "a container key reads only the containers it may report"));
  }
  ReadOffIo(
      readers_, TenantReads(req.who.tenant), io_, reply,
      [storage = storage_, container_id = req.params[0]] {
        return storage->GetContainer(container_id);
      },
      [id = req.RequestId()](const store::ContainerResult& r) {
        if (r.outcome != Outcome::kOk) return OutcomeResponse(r.outcome, r.message, id);
        return JsonResponse(200, ContainerJson(r.container));
      });
}

void ContainerRoutes::Drain(RouteRequest req, Reply reply) {
  ChangeContainer(std::move(req), std::move(reply), &store::Storage::Drain, false);
}

void ContainerRoutes::Undrain(RouteRequest req, Reply reply) {
  ChangeContainer(std::move(req), std::move(reply), &store::Storage::Undrain, false);
}

void ContainerRoutes::Remove(RouteRequest req, Reply reply) {
  ChangeContainer(std::move(req), std::move(reply), &store::Storage::Remove, true);
}

void ContainerRoutes::ChangeContainer(RouteRequest req, Reply reply, ContainerCall call,
                                      bool no_content) {
  BodyError error;
  if (!ParseNoBody(req.http.body(), &error)) return reply(BodyErrorResponse(error));
  // A drain's 200 has the container as its statement left it (the body of
  // GET /v1/containers/{id}), made on the io thread.
  store::ContainerCallback done = [io = io_, reply, request_id = req.RequestId(),
                                   no_content](store::ContainerResult r) {
    ReplyOnIo(io, reply, [r = std::move(r), request_id, no_content] {
      if (r.outcome != Outcome::kOk) return OutcomeResponse(r.outcome, r.message, request_id);
      if (no_content) return Response{http::status::no_content, 11};
      return JsonResponse(200, ContainerJson(r.container));
    });
  };
  Submit(reply, [storage = storage_, call, id = req.params[0], done = std::move(done)]() mutable {
    (storage->*call)(std::move(id), std::move(done));
  });
}

}  // namespace server
