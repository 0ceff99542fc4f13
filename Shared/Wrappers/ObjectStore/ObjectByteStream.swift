/// An object's bytes, chunk by chunk, as the store sends them.
///
/// Buffering is unbounded: the transfer runs on its own thread and is not paused for a
/// slow reader, so a reader holds at most the object (the objects here are bounded by the
/// upload limit). The stream finishes after the last chunk, or throws `ObjectStoreError`.
public struct ObjectByteStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let base: AsyncThrowingStream<[UInt8], any Error>

    init(_ base: AsyncThrowingStream<[UInt8], any Error>) { self.base = base }

    /// A stream fed by `continuation`, with the buffering policy described above.
    public static func make() -> (ObjectByteStream, AsyncThrowingStream<[UInt8], any Error>.Continuation) {
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream(bufferingPolicy: .unbounded)
        return (ObjectByteStream(stream), continuation)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator
        public mutating func next() async throws -> [UInt8]? { try await base.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator()) }
}
