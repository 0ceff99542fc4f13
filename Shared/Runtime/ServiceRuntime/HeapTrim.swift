import BlockingCalls
import CMalloc
import Lifecycle
import ServiceLogging

/// Gives the C heap's free pages back to the kernel every `interval` (`malloc_trim`). glibc keeps
/// what a thread freed in that thread's arena for reuse, so a process whose threads take turns
/// with large short-lived buffers (a transcode job's scan and outputs, a large batch) keeps each
/// arena's high-water mark resident for good: its memory steps up now and then under a steady
/// load and never comes down, though nothing is in use. Trimming releases those pages and keeps
/// what is in use; it takes the arenas' locks for a few milliseconds, off the task threads.
public enum HeapTrim {
    public static func service(every interval: Duration = .seconds(30), logger: Logger) -> any Service {
        PeriodicTask(name: "heap-trim", every: interval, failure: "could not trim the heap", logger: logger) {
            _ = await BlockingCall.run("heap.trim") { trim() }
        }
    }

    /// Releases the heap's free pages now (blocking); whether any were released.
    @discardableResult
    public static func trim() -> Bool {
        malloc_trim(0) == 1
    }
}
