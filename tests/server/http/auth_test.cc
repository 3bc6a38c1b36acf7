#include "server/http/auth.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/support/temp_dir.h"

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

// An admin key's sessions are tenant "default"'s: a tenant key of that name
// could list and release them.
TEST_CASE("auth: a tenant named default is refused, naming the line") {
  KeyStore keys;
  store::Status s = KeyStore::Parse("a admin\nb tenant default\n", "keys", &keys);
  CHECK_FALSE(s.ok());
  CHECK_THAT(s.ToString(), Catch::Contains("keys:2:"));
  CHECK_THAT(s.ToString(), Catch::Contains("reserved"));
  CHECK(KeyStore::Parse("a admin\nb tenant defaults\n", "keys", &keys).ok());
}

TEST_CASE("auth: a keys file others may read is a warning on loopback, refused beyond it") {
  testing::TempDir dir;
  const std::string path = dir.File("keys");
  std::ofstream(path) << "a admin\n";
  std::string warning;
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  CHECK(CheckKeysFileAccess(path, /*beyond_loopback=*/true, &warning).ok());
  CHECK(warning.empty());
  for (const mode_t mode : {mode_t{0640}, mode_t{0644}}) {
    INFO(mode);
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    CHECK(CheckKeysFileAccess(path, /*beyond_loopback=*/false, &warning).ok());
    CHECK_THAT(warning, Catch::Contains("chmod 600"));
    store::Status refused = CheckKeysFileAccess(path, /*beyond_loopback=*/true, &warning);
    CHECK_FALSE(refused.ok());
    CHECK_THAT(refused.ToString(), Catch::Contains(mode == 0640 ? "its group" : "every user"));
  }
}

TEST_CASE("auth: a keys file others may write is a warning on loopback, refused beyond it") {
  testing::TempDir dir;
  const std::string path = dir.File("keys");
  std::ofstream(path) << "a admin\n";
  std::string warning;
  // Written by others but not read (0602, 0620, 0622): they could still put
  // their own admin key in it.
  for (const mode_t mode : {mode_t{0602}, mode_t{0620}, mode_t{0622}, mode_t{0666}}) {
    INFO(mode);
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    CHECK(CheckKeysFileAccess(path, /*beyond_loopback=*/false, &warning).ok());
    CHECK_THAT(warning, Catch::Contains("chmod 600"));
    CHECK_THAT(warning, Catch::Contains("written by"));
    store::Status refused = CheckKeysFileAccess(path, /*beyond_loopback=*/true, &warning);
    CHECK(refused.IsInvalidArgument());
    CHECK_THAT(refused.ToString(), Catch::Contains((mode & S_IWOTH) != 0 ? "written by every user"
                                                                         : "written by its group"));
    CHECK_THAT(refused.ToString(), Catch::Contains("chmod 600 " + path));
  }
}

TEST_CASE("auth: assigning another KeyStore replaces the keys, limits and tenants at once") {
  KeyStore keys;
  REQUIRE(KeyStore::Parse("old-k tenant acme max_sessions=1\nbye-k tenant bolt\n", "k", &keys).ok());
  const KeyStore* seen_by_router = &keys;  // as the router holds it, across the reload
  KeyStore next;
  REQUIRE(KeyStore::Parse("old-k tenant acme max_sessions=2\nnew-k metrics\n", "k", &next).ok());
  keys = next;
  Principal who;
  REQUIRE(seen_by_router->Lookup("old-k", &who));
  CHECK(who.limits.max_sessions == 2);
  CHECK_FALSE(seen_by_router->Lookup("bye-k", &who));
  CHECK(seen_by_router->Lookup("new-k", &who));
  CHECK(seen_by_router->has_metrics_keys());
  CHECK(seen_by_router->tenants().count("bolt") == 0);
  CHECK(seen_by_router->LimitsOf("acme").max_sessions == 2);
  CHECK(Authorize(keys, "Bearer bye-k", Access::kTenant, &who) == AuthVerdict::kUnauthorized);
  CHECK(Authorize(keys, "Bearer new-k", Access::kMetrics, &who) == AuthVerdict::kAllowed);
  // A failed parse leaves the store as it was.
  CHECK(KeyStore::Parse("old-k tenant acme\nold-k admin\n", "k", &keys).IsInvalidArgument());
  CHECK(keys.Lookup("new-k", &who));
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
  // No key, a key of no one, or another scheme: no caller.
  for (const char* header : {"", "Bearer nope", "Basic ten-a"}) {
    INFO(header);
    CHECK(Authorize(keys, header, Access::kTenant, &who) == AuthVerdict::kUnauthorized);
  }
  // Each role's key against a route of each access it may ask for.
  const struct {
    const char* header;
    AuthVerdict tenant, admin, container;
  } roles[] = {
      {"Bearer ten-a", AuthVerdict::kAllowed, AuthVerdict::kForbidden, AuthVerdict::kForbidden},
      {"Bearer box-key", AuthVerdict::kForbidden, AuthVerdict::kForbidden, AuthVerdict::kAllowed},
      {"Bearer adm-key", AuthVerdict::kAllowed, AuthVerdict::kAllowed, AuthVerdict::kAllowed},
  };
  for (const auto& role : roles) {
    INFO(role.header);
    CHECK(Authorize(keys, role.header, Access::kTenant, &who) == role.tenant);
    CHECK(Authorize(keys, role.header, Access::kAdmin, &who) == role.admin);
    CHECK(Authorize(keys, role.header, Access::kContainer, &who) == role.container);
  }
  // A tenant key is its tenant's.
  REQUIRE(Authorize(keys, "Bearer ten-a", Access::kTenant, &who) == AuthVerdict::kAllowed);
  CHECK(who.tenant == "acme");
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

TEST_CASE("auth: a malformed line names its line and what is wrong, and never echoes a key") {
  // Each line holds a key shaped like a secret; the error must name the line
  // but carry none of it (an operator pastes these errors into tickets).
  const char* bad[] = {
      "admin SECRETK1\n",             // columns swapped
      "tenant SECRETK2 acme\n",       // columns swapped, three fields
      "container SECRETK3 weur-*\n",  // columns swapped, with a pattern
      "SECRETK4\n",                   // one field
      "SECRETK5 admin x y\n",         // four fields
      "SECRETK6 tenant\n",            // tenant without its name
      "SECRETK7 superuser\n",         // unknown role
  };
  for (const char* line : bad) {
    for (const std::string& text : {std::string(line), "# c\nok-key admin\n" + std::string(line)}) {
      INFO(text);
      KeyStore keys;
      store::Status s = KeyStore::Parse(text, "keys.txt", &keys);
      REQUIRE(s.IsInvalidArgument());
      const std::string want_line = text[0] == '#' ? "keys.txt:3:" : "keys.txt:1:";
      CHECK(s.message().find(want_line) != std::string::npos);
      CHECK(s.message().find("SECRETK") == std::string::npos);
      CHECK(s.ToString().find("SECRETK") == std::string::npos);
    }
  }
  KeyStore keys;
  store::Status s = KeyStore::Parse("SECRETK8 admin\nSECRETK8 tenant t\n", "k", &keys);
  REQUIRE(s.IsInvalidArgument());
  CHECK(s.message().find("k:2:") != std::string::npos);
  CHECK(s.message().find("SECRETK") == std::string::npos);
  s = KeyStore::Parse(std::string(300, 'S') + " admin\n", "k", &keys);
  REQUIRE(s.IsInvalidArgument());
  CHECK(s.message().find("SSSS") == std::string::npos);
}

TEST_CASE("auth: a UTF-8 byte order mark at the start of the file is not part of the first key") {
  KeyStore keys;
  REQUIRE(KeyStore::Parse("\xEF\xBB\xBFk1 admin\nk2 tenant acme\n", "k", &keys).ok());
  Principal who;
  CHECK(keys.Lookup("k1", &who));
  CHECK(who.role == Role::kAdmin);
  CHECK_FALSE(keys.Lookup("\xEF\xBB\xBFk1", &who));
  // Only at the very start: elsewhere it is a key's own bytes.
  REQUIRE(KeyStore::Parse("k1 admin\n\xEF\xBB\xBFk2 admin\n", "k", &keys).ok());
  CHECK(keys.Lookup("\xEF\xBB\xBFk2", &who));
}

TEST_CASE("auth: the Bearer scheme is matched case-insensitively (RFC 9110)") {
  KeyStore keys;
  REQUIRE(KeyStore::Parse(kKeys, "keys", &keys).ok());
  for (const char* header : {"Bearer ten-a", "bearer ten-a", "BEARER ten-a", "bEaReR ten-a",
                             "bearer   ten-a"}) {
    INFO(header);
    Principal who;
    CHECK(Authorize(keys, header, Access::kTenant, &who) == AuthVerdict::kAllowed);
    CHECK(who.tenant == "acme");
  }
  // The scheme without its space, without a key, or misspelt is no key.
  Principal who;
  for (const char* header : {"bearerten-a", "bearer", "bearer ", "Bearex ten-a"}) {
    INFO(header);
    CHECK(Authorize(keys, header, Access::kTenant, &who) == AuthVerdict::kUnauthorized);
  }
}

TEST_CASE("auth: a container key's third field is the ids it may report, exact or a prefix*") {
  KeyStore keys;
  REQUIRE(KeyStore::Parse("a admin\n"
                          "k9 container weur-1*\n"
                          "k10 container eeur-7\n"
                          "k11 container *\n"
                          "k12 container\n"
                          "k13 container\n",
                          "k", &keys)
              .ok());
  CHECK(keys.unscoped_container_keys() == 2);
  Principal who;
  REQUIRE(keys.Lookup("k9", &who));
  CHECK(who.role == Role::kContainer);
  CHECK(who.report_ids == "weur-1*");
  CHECK(who.MayReport("weur-1"));
  CHECK(who.MayReport("weur-10"));
  CHECK_FALSE(who.MayReport("weur-"));
  CHECK_FALSE(who.MayReport("weur-2"));
  CHECK_FALSE(who.MayReport("xweur-1"));
  REQUIRE(keys.Lookup("k10", &who));
  CHECK(who.MayReport("eeur-7"));
  CHECK_FALSE(who.MayReport("eeur-70"));
  CHECK_FALSE(who.MayReport("eeur-"));
  REQUIRE(keys.Lookup("k11", &who));
  CHECK(who.MayReport("anything"));
  REQUIRE(keys.Lookup("k12", &who));
  CHECK(who.report_ids.empty());
  CHECK(who.MayReport("anything"));
  REQUIRE(keys.Lookup("a", &who));
  CHECK(who.MayReport("anything"));
  CHECK(Principal{}.MayReport("x"));  // open mode: the admin of tenant default

  // '*' only at the end; the message names neither the key nor the pattern.
  store::Status s = KeyStore::Parse("SECRETK container we*ur\n", "k", &keys);
  REQUIRE(s.IsInvalidArgument());
  CHECK(s.message().find("k:1:") != std::string::npos);
  CHECK(s.message().find("SECRETK") == std::string::npos);
  CHECK(s.message().find("we*ur") == std::string::npos);
  s = KeyStore::Parse("SECRETK container " + std::string(KeyStore::kMaxPatternBytes + 1, 'p') + "\n",
                      "k", &keys);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message().find("SECRETK") == std::string::npos);
  REQUIRE(KeyStore::Parse("a admin\nb tenant t\n", "k", &keys).ok());
  CHECK(keys.unscoped_container_keys() == 0);
}

TEST_CASE("auth: a tenant line may carry its limits, which hold for every key of the tenant") {
  KeyStore keys;
  store::Status s = KeyStore::Parse(
      "a admin\n"
      "ops admin acme                # an admin key naming acme\n"
      "k2 tenant acme max_sessions=50 claims_per_s=20 max_waiters=100\n"
      "k3 tenant acme claims_per_s=20   # the same value again: fine\n"
      "k4 tenant bolt claims_per_s=0.5\n"
      "k5 tenant free max_sessions=0\n"
      "k6 tenant plain\n"
      "k7 container\n",
      "keys", &keys);
  INFO(s.ToString());
  REQUIRE(s.ok());
  Principal who;
  for (const char* key : {"k2", "k3", "ops"}) {
    INFO(key);
    REQUIRE(keys.Lookup(key, &who));
    CHECK(who.tenant == "acme");
    CHECK(who.limits.max_sessions == 50);
    CHECK(who.limits.claims_per_s == 20);
    CHECK(who.limits.max_waiters == 100);
  }
  REQUIRE(keys.Lookup("k4", &who));
  CHECK(who.limits.claims_per_s == 0.5);
  CHECK(who.limits.max_sessions == store::TenantLimits::kUnset);
  CHECK(who.limits.max_waiters == store::TenantLimits::kUnset);
  REQUIRE(keys.Lookup("k5", &who));
  CHECK(who.limits.max_sessions == store::kUnlimited);  // 0: unlimited, as the flag's
  REQUIRE(keys.Lookup("k6", &who));
  CHECK(who.limits.max_sessions == store::TenantLimits::kUnset);
  CHECK(who.limits.claims_per_s == 0);
  REQUIRE(keys.Lookup("a", &who));
  CHECK(who.limits.max_sessions == store::TenantLimits::kUnset);
  // The tenants the file names, and only those (admin "default" is not one).
  CHECK(keys.tenants().size() == 4);
  CHECK(keys.tenants().count("acme") == 1);
  CHECK(keys.tenants().count("default") == 0);
  CHECK(keys.LimitsOf("acme").max_sessions == 50);
  CHECK(keys.LimitsOf("nobody").max_sessions == store::TenantLimits::kUnset);
  CHECK(keys.LimitsOf("nobody").claims_per_s == 0);
}

TEST_CASE("auth: a bad limit is refused naming its line, never a key or an unknown name") {
  struct Case {
    const char* line;
    const char* says;
  } cases[] = {
      {"SECRETK tenant acme max_session=5\n", "unknown limit"},
      {"SECRETK tenant acme SECRETX=5\n", "unknown limit"},
      {"SECRETK tenant acme max_sessions\n", "NAME=VALUE"},
      {"SECRETK tenant acme max_sessions=-1\n", "whole number"},
      {"SECRETK tenant acme max_sessions=1.5\n", "whole number"},
      {"SECRETK tenant acme max_sessions=\n", "whole number"},
      {"SECRETK tenant acme max_sessions=9999999999999\n", "whole number"},
      {"SECRETK tenant acme max_waiters=2000000\n", "whole number"},
      {"SECRETK tenant acme claims_per_s=fast\n", "claims_per_s must be a number"},
      {"SECRETK tenant acme claims_per_s=1e3\n", "claims_per_s must be a number"},
      {"SECRETK tenant acme claims_per_s=inf\n", "claims_per_s must be a number"},
      {"SECRETK tenant acme claims_per_s=-2\n", "claims_per_s must be a number"},
      {"SECRETK tenant acme claims_per_s=2000000\n", "claims_per_s must be a number"},
      {"SECRETK tenant acme max_sessions=1 max_sessions=1\n", "given twice"},
      {"SECRETK tenant max_sessions=1\n", "not a tenant name"},
      {"SECRETK admin max_sessions=1\n", "tenant lines only"},
      {"SECRETK admin acme max_sessions=1\n", "tenant lines only"},
      {"SECRETK container w-1 max_sessions=1\n", "fields"},
      {"SECRETK metrics max_sessions=1\n", "no third field"},
  };
  for (const Case& c : cases) {
    for (const std::string& text :
         {std::string(c.line), "k0 tenant acme\n\n" + std::string(c.line)}) {
      INFO(text);
      KeyStore keys;
      store::Status s = KeyStore::Parse(text, "keys.txt", &keys);
      REQUIRE(s.IsInvalidArgument());
      CHECK_THAT(s.message(), Catch::Contains(text[0] == 'k' ? "keys.txt:3:" : "keys.txt:1:"));
      CHECK_THAT(s.message(), Catch::Contains(c.says));
      CHECK(s.message().find("SECRET") == std::string::npos);
    }
  }
  // Two lines of one tenant may not disagree: its limits are its own,
  // whichever key claims.
  KeyStore keys;
  store::Status s = KeyStore::Parse(
      "k1 tenant acme max_sessions=5\nk2 tenant bolt max_sessions=7\nk3 tenant acme max_sessions=6\n",
      "keys", &keys);
  REQUIRE(s.IsInvalidArgument());
  CHECK_THAT(s.message(), Catch::Contains("keys:3:"));
  CHECK_THAT(s.message(), Catch::Contains("max_sessions differs"));
}

TEST_CASE("auth: /metrics is public until a metrics key is configured, then metrics or admin") {
  KeyStore without;
  REQUIRE(KeyStore::Parse(kKeys, "keys", &without).ok());
  CHECK_FALSE(without.has_metrics_keys());
  Principal who;
  CHECK(Authorize(without, "", Access::kMetrics, &who) == AuthVerdict::kAllowed);

  KeyStore keys;
  REQUIRE(KeyStore::Parse(std::string(kKeys) + "scrape-key metrics\n", "keys", &keys).ok());
  CHECK(keys.has_metrics_keys());
  CHECK(Authorize(keys, "", Access::kMetrics, &who) == AuthVerdict::kUnauthorized);
  CHECK(Authorize(keys, "Bearer nope", Access::kMetrics, &who) == AuthVerdict::kUnauthorized);
  CHECK(Authorize(keys, "Bearer scrape-key", Access::kMetrics, &who) == AuthVerdict::kAllowed);
  CHECK(who.role == Role::kMetrics);
  CHECK(Authorize(keys, "Bearer adm-key", Access::kMetrics, &who) == AuthVerdict::kAllowed);
  CHECK(Authorize(keys, "Bearer ten-a", Access::kMetrics, &who) == AuthVerdict::kForbidden);
  CHECK(Authorize(keys, "Bearer box-key", Access::kMetrics, &who) == AuthVerdict::kForbidden);
  // A metrics key reads capacity too (the dashboard), and nothing else.
  CHECK(Authorize(keys, "Bearer scrape-key", Access::kCapacity, &who) == AuthVerdict::kAllowed);
  CHECK(Authorize(keys, "Bearer ten-a", Access::kCapacity, &who) == AuthVerdict::kAllowed);
  CHECK(Authorize(keys, "Bearer box-key", Access::kCapacity, &who) == AuthVerdict::kForbidden);
  for (Access a : {Access::kTenant, Access::kAdmin, Access::kContainer}) {
    CHECK(Authorize(keys, "Bearer scrape-key", a, &who) == AuthVerdict::kForbidden);
  }
  // Open mode: everything is open, /metrics too.
  CHECK(Authorize(KeyStore{}, "", Access::kMetrics, &who) == AuthVerdict::kAllowed);
}

}  // namespace
}  // namespace server
