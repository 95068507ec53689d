// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status (docs/coding-guidelines.md §4).
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define MEMSNAP_CONCAT_INNER(a, b) a##b
#define MEMSNAP_CONCAT(a, b) MEMSNAP_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::absl::Status _memsnap_status = (expr);           \
    if (!_memsnap_status.ok()) return _memsnap_status; \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  MEMSNAP_ASSIGN_OR_RETURN_IMPL(MEMSNAP_CONCAT(_memsnap_statusor_, __LINE__), lhs, expr)

#define MEMSNAP_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()
