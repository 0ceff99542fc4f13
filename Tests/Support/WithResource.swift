/// Runs `body` on `resource`, then `release`s it, whether `body` returned or threw: the one
/// lifetime of every harness, stack and fixture the suites open for a test.
public func withResource<Resource, T>(_ resource: Resource, release: (Resource) async -> Void,
                                      _ body: (Resource) async throws -> T) async throws -> T {
    let result: Result<T, any Error>
    do { result = .success(try await body(resource)) } catch { result = .failure(error) }
    await release(resource)
    return try result.get()
}
