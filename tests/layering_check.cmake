# Fails on a forbidden #include (docs/architecture.md "Who may include whom"):
#   base/                      nothing of ours
#   store/ (the seam)          base/ and itself, never an engine's folder
#   store/sqlite/ (an engine)  base/, the seam and itself
#   allocator/ batcher/ kvmirror/
#                              base/ and the seam only: never each other,
#                              server/ or an engine (store/<engine>/)
#   server/                    anything but an engine's folder: it opens
#                              storage through store/storage.h (OpenStorage);
#                              inside it, http/ knows nothing of the API, the
#                              ops pages, the agent or the composition on top
#                              (service, config, demo, admin, main), api/ and
#                              ops/ know neither each other nor the top, and
#                              agent/ (a client of the server) sees http/
#                              (the log) and client/ but neither api/, ops/
#                              nor the top; client/ (the HTTP client and the
#                              client commands' requests) sees none of them
# and nothing but server/ includes Boost or nlohmann/json.
set(bad "")
set(parts allocator batcher kvmirror server)
set(engines sqlite postgres)

# Appends to `bad` every include of FILE that matches REGEX, with WHY.
function(forbid file regex why)
  file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]${regex}")
  foreach(line ${includes})
    list(APPEND bad "${file}: ${line} (${why})")
  endforeach()
  set(bad ${bad} PARENT_SCOPE)
endfunction()

function(sources_of dir out)
  file(GLOB_RECURSE files ${SOURCE_DIR}/${dir}/*.h ${SOURCE_DIR}/${dir}/*.cc)
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# forbid() on every source of DIR. A macro, so that what forbid appends to
# `bad` stays in the caller's scope.
macro(forbid_in dir regex why)
  sources_of(${dir} files)
  foreach(f ${files})
    forbid(${f} "${regex}" "${why}")
  endforeach()
endmacro()

foreach(part allocator batcher kvmirror)
  sources_of(${part} files)
  foreach(f ${files})
    foreach(other ${parts})
      if(NOT other STREQUAL part)
        forbid(${f} "${other}/" "${part}/ sees base/ and the storage seam only")
      endif()
    endforeach()
    forbid(${f} "store/(sqlite|postgres)/" "below the storage seam")
    forbid(${f} "(boost|nlohmann)/" "only server/ may")
  endforeach()
endforeach()

forbid_in(server "store/(sqlite|postgres)/" "server/ opens storage through store/storage.h")

file(GLOB store_seam ${SOURCE_DIR}/store/*.h ${SOURCE_DIR}/store/*.cc)
foreach(f ${store_seam})
  forbid(${f} "(allocator|batcher|kvmirror|server)/" "store/ is below every part")
  # open.cc is the one place that names the engines.
  if(NOT f MATCHES "/store/open\\.cc$")
    forbid(${f} "store/(sqlite|postgres)/" "the seam knows no engine")
  endif()
endforeach()

foreach(engine ${engines})
  forbid_in(store/${engine} "(allocator|batcher|kvmirror|server)/" "an engine is below every part")
endforeach()

# Inside an engine, its storage class (sqlite_storage.h, postgres_storage.h)
# is the top: no other header of the engine includes it, and a source does
# only to define the class's members (its topic files), never for a type
# declared there that belongs lower down.
foreach(engine ${engines})
  set(top "store/${engine}/${engine}_storage\\.h")
  sources_of(store/${engine} files)
  foreach(f ${files})
    if(f MATCHES "/${engine}_storage\\.(h|cc)$")
      continue()
    endif()
    if(f MATCHES "\\.h$")
      forbid(${f} "${top}" "the engine's top; a header below it may not include it")
    else()
      file(STRINGS ${f} members REGEX "(Sqlite|Postgres)Storage::")
      if(NOT members)
        forbid(${f} "${top}" "included only by the files that define its members")
      endif()
    endif()
  endforeach()
endforeach()

forbid_in(base "(store|allocator|batcher|kvmirror|server)/" "base/ depends on nothing of ours")

set(server_top "server/(service|config|demo|admin|main|agent_command|client_command|cli_flags)\\.h")
foreach(room http api ops agent client)
  if(room STREQUAL "http")
    set(forbidden "server/(api|ops|agent|client)/|${server_top}")
  elseif(room STREQUAL "api")
    set(forbidden "server/(ops|agent|client)/|${server_top}")
  elseif(room STREQUAL "ops")
    set(forbidden "server/(api|agent|client)/|${server_top}")
  elseif(room STREQUAL "agent")
    set(forbidden "server/(api|ops)/|${server_top}")
  else()  # client: the wire and nothing of the server
    set(forbidden "server/(http|api|ops|agent)/|${server_top}")
  endif()
  sources_of(server/${room} files)
  file(GLOB_RECURSE templates ${SOURCE_DIR}/server/${room}/*.in)
  foreach(f ${files} ${templates})
    forbid(${f} "(${forbidden})" "server/${room}/ may not include this")
  endforeach()
endforeach()

if(bad)
  list(JOIN bad "\n" msg)
  message(FATAL_ERROR "forbidden includes:\n${msg}")
endif()
message(STATUS "layering ok")
