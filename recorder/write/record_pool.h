// What a record is built of, kept per thread for the next op: in the steady
// state the per-op path reuses the buffers of records already written
// (names, shapes, vectors) rather than allocating and freeing them for
// every op (issue 26: a dozen allocations per op at level 0 were about a
// tenth of acc's cost on the op's thread).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "format/record.h"
#include "recorder/observe/captured_op.h"

namespace acc::recorder::record_pool {

// An empty record, with the capacity of one written before on this thread
// where there is one.
std::unique_ptr<CapturedOp> take();

// Hands back a record that has been encoded: its buffers serve a later op
// of the calling thread, or, where that thread only hands back (the writer,
// which completes device records), of another thread, through a shared
// depot. Anything the record still owns (device values, held tensors) is
// released now.
void recycle(std::unique_ptr<CapturedOp> record);

// This thread's buffer for a record's content definitions while they are
// published after the record itself went to the writer (device records):
// kept from record to record. Null once the thread's pool is gone.
std::vector<ContentStore::Pending>* contentsBuffer();

// Appends an empty tensor to `record`, with the buffers (shape, strides,
// device name) of a recycled one where there is one: first the record's
// own spares (the tensors of its last op, kept in it by recycle()), then
// the thread's pool. Empty but for its device name, which the caller sets
// (captureTensorInto).
format::Tensor& appendTensor(CapturedOp& record);

// Memory for small per-op objects of one size (the observer's context):
// a per-thread free list of at most a few blocks. Blocks may be freed on
// another thread than the one that took them.
void* takeBlock(size_t size);
void giveBlock(void* block, size_t size);

}  // namespace acc::recorder::record_pool
