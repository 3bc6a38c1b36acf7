#include "store/container_results.h"

#include <utility>

namespace store {

ContainerResult NoContainer(const std::string& id) {
  return Failed<ContainerResult>(Outcome::kNotFound, "no container " + id);
}

ContainerResult AnswerContainerRead(const std::string& id, const Status& read,
                                    std::optional<ContainerInfo> found) {
  if (!read.ok()) return Failed<ContainerResult>(OutcomeOfError(read), read.ToString());
  if (!found) return NoContainer(id);
  return ContainerResult{Outcome::kOk, std::move(*found), 0, ""};
}

ContainerResult RemoveAnswer(const std::string& id, bool removed, bool exists) {
  if (removed) return ContainerResult{Outcome::kOk, {}, 1, ""};
  if (exists) {
    return Failed<ContainerResult>(Outcome::kConflict,
                                   "container " + id + " is picked; release it first");
  }
  return NoContainer(id);
}

}  // namespace store
