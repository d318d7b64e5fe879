//! Batched reading of the records librdkafka fetched for the `kafka` input.
//!
//! rdkafka's `BaseConsumer::poll` hands out one record per call, each a wait on librdkafka's
//! queue with its lock, clock reads and wake-ups. Instead, at every assignment each assigned
//! partition's fetch queue is forwarded ([`FetchQueue::forward`], librdkafka's
//! `rd_kafka_queue_forward`) to a [`FetchQueue`] of the consumer's own, and the consumer
//! thread takes a whole batch from it in one call ([`FetchQueue::fill`] into a [`Batch`]),
//! then reads each record through a [`Record`] view without copying it.
//!
//! Group events (assignments, revocations, commit results, errors) stay on the consumer
//! queue, which rdkafka's `poll` serves between batches. The fetch queue must not be the
//! consumer queue itself: librdkafka would then find the rebalance events there and, as
//! rdkafka asks for rebalance events rather than a callback, answer them with a forced
//! unassign. Records of a partition revoked while they wait in the fetch queue are dropped by
//! librdkafka (their fetch version is outdated); librdkafka also stops forwarding a partition
//! when it stops fetching it, hence the forwarding again at each assignment.

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::NonNull;
use std::time::Duration;

use rdkafka::bindings as rd;
use rdkafka::client::Client;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, TopicPartitionList};

/// A librdkafka queue the assigned partitions' records are forwarded to.
pub struct FetchQueue {
    queue: NonNull<rd::rd_kafka_queue_t>,
}

// SAFETY: librdkafka's queues are locked internally; a queue handle may be used from any
// thread while the client that made it lives (the consumer outlives its FetchQueue).
unsafe impl Send for FetchQueue {}
unsafe impl Sync for FetchQueue {}

impl FetchQueue {
    /// A new, empty queue of `client`. It must be dropped before the client is.
    pub fn new<C: ClientContext>(client: &Client<C>) -> FetchQueue {
        // SAFETY: the client's handle is valid; rd_kafka_queue_new never returns null (it
        // aborts when out of memory).
        let queue = unsafe { rd::rd_kafka_queue_new(client.native_ptr()) };
        FetchQueue {
            queue: NonNull::new(queue).expect("rd_kafka_queue_new returned null"),
        }
    }

    /// Forwards the fetch queue of each partition in `tpl` (just assigned) to this queue.
    pub fn forward<C: ClientContext>(&self, client: &Client<C>, tpl: &TopicPartitionList) {
        for e in tpl.elements() {
            let Ok(topic) = CString::new(e.topic()) else {
                continue;
            };
            // SAFETY: valid client and C string; the partition queue handle is a new
            // reference, released right after forwarding (forwarding keeps its own).
            unsafe {
                let partition = rd::rd_kafka_queue_get_partition(
                    client.native_ptr(),
                    topic.as_ptr(),
                    e.partition(),
                );
                if partition.is_null() {
                    tracing::warn!(
                        topic = e.topic(),
                        partition = e.partition(),
                        "kafka input: no fetch queue for an assigned partition"
                    );
                    continue;
                }
                rd::rd_kafka_queue_forward(partition, self.queue.as_ptr());
                rd::rd_kafka_queue_destroy(partition);
            }
        }
    }

    /// Replaces `batch`'s records with new ones: waits up to `timeout` for a first record,
    /// then takes those already queued behind it, up to the batch's capacity in all.
    pub fn fill(&self, timeout: Duration, batch: &mut Batch) {
        batch.clear();
        let wait = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: the queue is valid; each message returned is owned by the batch, which
        // destroys it; the array passed has room for `room` more pointers.
        unsafe {
            let first = rd::rd_kafka_consume_queue(self.queue.as_ptr(), wait);
            if first.is_null() {
                return;
            }
            batch.messages.push(first);
            let room = batch.capacity - 1;
            if room == 0 {
                return;
            }
            let tail = batch.messages.as_mut_ptr().add(1);
            let n = rd::rd_kafka_consume_batch_queue(self.queue.as_ptr(), 0, tail, room);
            if n > 0 {
                batch.messages.set_len(1 + n as usize);
            }
        }
    }
}

impl Drop for FetchQueue {
    fn drop(&mut self) {
        // SAFETY: this handle is ours and not used after; partitions still forwarding here
        // hold their own reference to the underlying queue.
        unsafe { rd::rd_kafka_queue_destroy(self.queue.as_ptr()) }
    }
}

/// Records taken from a [`FetchQueue`], owned until the next fill or the drop.
pub struct Batch {
    messages: Vec<*mut rd::rd_kafka_message_t>,
    capacity: usize,
}

impl Batch {
    /// Room for `capacity` records (at least one).
    pub fn with_capacity(capacity: usize) -> Batch {
        let capacity = capacity.max(1);
        Batch {
            messages: Vec::with_capacity(capacity),
            capacity,
        }
    }

    pub fn records(&self) -> impl Iterator<Item = Record<'_>> {
        // SAFETY: each pointer is a live message owned by this batch.
        self.messages.iter().map(|m| Record {
            message: unsafe { &**m },
        })
    }

    fn clear(&mut self) {
        for m in self.messages.drain(..) {
            // SAFETY: owned by the batch, and no Record borrows it (they borrow the batch).
            unsafe { rd::rd_kafka_message_destroy(m) }
        }
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.clear();
    }
}

/// One record (or a consumer error) as librdkafka holds it.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    message: &'a rd::rd_kafka_message_t,
}

impl<'a> Record<'a> {
    /// A view of the message behind one of rdkafka's.
    pub fn of(message: &'a rdkafka::message::BorrowedMessage<'_>) -> Record<'a> {
        // SAFETY: the message lives as long as rdkafka's handle to it.
        Record {
            message: unsafe { &*message.ptr() },
        }
    }

    /// The consumer error this entry stands for, with librdkafka's text, instead of a record.
    pub fn error(&self) -> Option<String> {
        if self.message.err == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            return None;
        }
        let code = RDKafkaErrorCode::from(self.message.err);
        let text = String::from_utf8_lossy(self.payload());
        Some(if text.is_empty() {
            code.to_string()
        } else {
            format!("{code}: {text}")
        })
    }

    pub fn payload(&self) -> &'a [u8] {
        bytes(self.message.payload, self.message.len)
    }

    pub fn key(&self) -> Option<&'a [u8]> {
        (!self.message.key.is_null()).then(|| bytes(self.message.key, self.message.key_len))
    }

    pub fn topic(&self) -> &'a str {
        if self.message.rkt.is_null() {
            return "";
        }
        // SAFETY: librdkafka keeps the topic (and its name) alive while the message is.
        let name = unsafe { CStr::from_ptr(rd::rd_kafka_topic_name(self.message.rkt)) };
        name.to_str().unwrap_or_default()
    }

    pub fn partition(&self) -> i32 {
        self.message.partition
    }

    pub fn offset(&self) -> i64 {
        self.message.offset
    }

    /// The record's timestamp in milliseconds, when it has one.
    pub fn timestamp(&self) -> Option<i64> {
        let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        // SAFETY: a live message.
        let t = unsafe { rd::rd_kafka_message_timestamp(self.message, &mut kind) };
        (kind != rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && t >= 0)
            .then_some(t)
    }

    /// The record's headers: name and value (`None` for a null value), in order.
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        let mut headers = std::ptr::null_mut();
        // SAFETY: a live message; the headers belong to it.
        let found = unsafe {
            rd::rd_kafka_message_headers(self.message, &mut headers)
                == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR
        };
        let headers = if found { headers } else { std::ptr::null_mut() };
        (0..).map_while(move |i| {
            if headers.is_null() {
                return None;
            }
            let mut name: *const c_char = std::ptr::null();
            let mut value: *const c_void = std::ptr::null();
            let mut size = 0;
            // SAFETY: headers owned by the live message; out-pointers are valid.
            let err = unsafe {
                rd::rd_kafka_header_get_all(headers, i, &mut name, &mut value, &mut size)
            };
            if err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                return None;
            }
            // SAFETY: librdkafka's header names are NUL-terminated.
            let name = unsafe { CStr::from_ptr(name) }.to_str().unwrap_or_default();
            Some((name, (!value.is_null()).then(|| bytes(value, size))))
        })
    }
}

/// The bytes librdkafka gives as a pointer and a length (null when empty).
fn bytes<'a>(ptr: *const c_void, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        return &[];
    }
    // SAFETY: librdkafka's message memory, alive as long as the message ('a).
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) }
}
