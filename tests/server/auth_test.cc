#include "server/auth.h"

#include <catch2/catch.hpp>

namespace server {
namespace {

const char kKeys[] =
    "# edgealloc keys\n"
    "\n"
    "adm-key admin\n"
    "ten-a tenant acme   # acme's key\n"
    "ten-b tenant bolt\n"
    "box-key container\n";

TEST_CASE("auth: a keys file gives each key its role and tenant") {
  KeyStore keys;
  REQUIRE(KeyStore::Parse(kKeys, "keys", &keys).ok());
  CHECK(keys.configured());
  CHECK(keys.size() == 4);
  Principal who;
  REQUIRE(keys.Lookup("ten-a", &who));
  CHECK(who.role == Role::kTenant);
  CHECK(who.tenant == "acme");
  REQUIRE(keys.Lookup("adm-key", &who));
  CHECK(who.role == Role::kAdmin);
  REQUIRE(keys.Lookup("box-key", &who));
  CHECK(who.role == Role::kContainer);
  CHECK_FALSE(keys.Lookup("ten-", &who));
  CHECK_FALSE(keys.Lookup("ten-aa", &who));
  CHECK_FALSE(keys.Lookup("", &who));
  CHECK_FALSE(keys.Lookup(std::string(1000, 'x'), &who));
}

TEST_CASE("auth: a tenant key without its tenant name is refused, naming the line") {
  KeyStore keys;
  store::Status s = KeyStore::Parse("a admin\nb tenant\n", "k.txt", &keys);
  REQUIRE(s.IsInvalidArgument());
  CHECK(s.message().find("k.txt:2") != std::string::npos);
  CHECK(s.message().find("tenant name") != std::string::npos);
}

TEST_CASE("auth: an unknown role, a duplicate key or an empty file is refused") {
  KeyStore keys;
  store::Status s = KeyStore::Parse("a superuser\n", "k", &keys);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message().find("admin, tenant, container") != std::string::npos);
  CHECK(KeyStore::Parse("a admin\na container\n", "k", &keys).IsInvalidArgument());
  CHECK(KeyStore::Parse("# nothing\n\n", "k", &keys).IsInvalidArgument());
  CHECK(KeyStore::Parse("lonely\n", "k", &keys).IsInvalidArgument());
  CHECK(KeyStore::Load("/nonexistent/keys", &keys).IsIOError());
}

TEST_CASE("auth: roles reach only their routes") {
  KeyStore keys;
  REQUIRE(KeyStore::Parse(kKeys, "keys", &keys).ok());
  Principal who;
  CHECK(Authorize(keys, "", Access::kPublic, &who) == AuthVerdict::kAllowed);
  CHECK(Authorize(keys, "", Access::kTenant, &who) == AuthVerdict::kUnauthorized);
  CHECK(Authorize(keys, "Bearer nope", Access::kTenant, &who) == AuthVerdict::kUnauthorized);
  CHECK(Authorize(keys, "Basic ten-a", Access::kTenant, &who) == AuthVerdict::kUnauthorized);
  CHECK(Authorize(keys, "Bearer ten-a", Access::kTenant, &who) == AuthVerdict::kAllowed);
  CHECK(who.tenant == "acme");
  CHECK(Authorize(keys, "Bearer ten-a", Access::kAdmin, &who) == AuthVerdict::kForbidden);
  CHECK(Authorize(keys, "Bearer ten-a", Access::kContainer, &who) == AuthVerdict::kForbidden);
  CHECK(Authorize(keys, "Bearer box-key", Access::kContainer, &who) == AuthVerdict::kAllowed);
  CHECK(Authorize(keys, "Bearer box-key", Access::kTenant, &who) == AuthVerdict::kForbidden);
  CHECK(Authorize(keys, "Bearer adm-key", Access::kAdmin, &who) == AuthVerdict::kAllowed);
  CHECK(Authorize(keys, "Bearer adm-key", Access::kTenant, &who) == AuthVerdict::kAllowed);
  CHECK(Authorize(keys, "Bearer adm-key", Access::kContainer, &who) == AuthVerdict::kAllowed);
}

TEST_CASE("auth: without a keys file every caller is the admin of tenant default") {
  KeyStore open;
  CHECK_FALSE(open.configured());
  Principal who;
  who.role = Role::kContainer;
  CHECK(Authorize(open, "", Access::kAdmin, &who) == AuthVerdict::kAllowed);
  CHECK(who.role == Role::kAdmin);
  CHECK(who.tenant == "default");
}

}  // namespace
}  // namespace server
