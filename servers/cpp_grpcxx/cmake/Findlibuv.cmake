# Findlibuv gives find_package(libuv) what libuv's own CMake package would:
# the target libuv::uv. Debian's libuv1-dev ships only pkg-config data, so
# the target is made from that. GLOBAL, because grpcxx links it publicly and
# its users, in other folders, must see it too.
find_package(PkgConfig REQUIRED)
pkg_check_modules(libuv QUIET IMPORTED_TARGET GLOBAL libuv)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(libuv
	REQUIRED_VARS libuv_LINK_LIBRARIES
	VERSION_VAR libuv_VERSION
)

if(libuv_FOUND AND NOT TARGET libuv::uv)
	add_library(libuv::uv ALIAS PkgConfig::libuv)
endif()
