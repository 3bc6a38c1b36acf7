#ifndef EDGEALLOC_STORE_CONTAINER_RESULTS_H_
#define EDGEALLOC_STORE_CONTAINER_RESULTS_H_

#include <optional>
#include <string>
#include <string_view>

#include "store/status.h"
#include "store/types.h"

namespace store {

// The answers of the container operations (Storage::GetContainer, Drain,
// Undrain, Remove), shaped once for every engine from what its statements found.

// kNotFound for `id`.
ContainerResult NoContainer(const std::string& id);

// GetContainer's answer, from its read: the read's error (as its outcome),
// no such container, or the container. Drain's and Undrain's too, from the
// row their statement returned.
ContainerResult AnswerContainerRead(const std::string& id, const Status& read,
                                    std::optional<ContainerInfo> found);

// Remove's answer: `removed` if the delete of an unpicked container took a
// row; else `exists` tells a picked container (kConflict) from none.
ContainerResult RemoveAnswer(const std::string& id, bool removed, bool exists);

}  // namespace store

#endif  // EDGEALLOC_STORE_CONTAINER_RESULTS_H_
