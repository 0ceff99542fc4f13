import Contracts
import Foundation
import Lifecycle
import ObjectStore
import ServiceLogging

/// The room compute core as the pipeline drives it: a package and its `roomplan.json` on
/// disk in, the output files in `outputDirectory` out. It reports the stages from
/// `validating` on; a bad input is a `TranscodeFailure`.
public protocol RoomConverter: Sendable {
    func convert(package: String, roomplan: String, request: RoomTranscodeRequest, outputDirectory: String,
                 enter: @escaping @Sendable (TranscodeStage) async throws -> Void) async throws -> ConvertedRoom
}

/// What a conversion wrote, relative to its output directory.
public struct ConvertedRoom: Sendable {
    public struct File: Sendable {
        /// Relative path, which is also the key below `rooms/{roomId}/{versionId}/`.
        public var name: String
        public var contentType: String
        public init(name: String, contentType: String) {
            self.name = name
            self.contentType = contentType
        }
    }

    /// Every output but the manifest (GLBs, thumbnails).
    public var files: [File]
    /// The manifest's relative path; uploaded last.
    public var manifest: String
    public var qualityGrade: String

    public init(files: [File], manifest: String, qualityGrade: String) {
        self.files = files
        self.manifest = manifest
        self.qualityGrade = qualityGrade
    }
}

/// The production pipeline: the sources are streamed from the store into a folder of the
/// job's own (bounded by `maxJobBytes`), the
/// converter checks them and writes the outputs, and they are uploaded under `rooms/{roomId}/{versionId}/`,
/// the manifest last. The folder is removed whatever happens.
public struct StoreTranscodePipeline: TranscodePipeline {
    let store: any ObjectStore
    let converter: any RoomConverter
    let workDirectory: String
    let maxJobBytes: Int64

    /// Outputs uploaded at the same time; the manifest follows once every one of them is stored.
    static let concurrentUploads = 4

    public init(store: any ObjectStore, converter: any RoomConverter, workDirectory: String, maxJobBytes: Int64) {
        self.store = store
        self.converter = converter
        self.workDirectory = workDirectory
        self.maxJobBytes = maxJobBytes
    }

    public func transcode(_ request: RoomTranscodeRequest,
                          enter: @escaping @Sendable (TranscodeStage) async throws -> Void) async throws -> TranscodeOutputs {
        let folder = (workDirectory as NSString).appendingPathComponent("transcode-\(request.versionId)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(atPath: folder + "/out", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }

        try await enter(.downloading)
        let package = folder + "/source.usdz"
        let roomplan = folder + "/roomplan.json"
        try await download(request.source.usdzKey, declared: request.source.usdzBytes, to: package, name: "source.usdz",
                           budget: maxJobBytes)
        try await download(request.source.roomplanJsonKey, declared: request.source.roomplanJsonBytes, to: roomplan,
                           name: "roomplan.json", budget: maxJobBytes - request.source.usdzBytes)

        // The converter checks the declared sha256 and the package itself.
        try await enter(.validating)
        let converted = try await converter.convert(package: package, roomplan: roomplan, request: request,
                                                    outputDirectory: folder + "/out", enter: enter)

        let base = "rooms/\(request.roomId)/\(request.versionId)/"
        var keys: [String: String] = [:]
        // The outputs are independent: up to `concurrentUploads` PUTs at once (one after another,
        // the 21 GLBs of the 10 MB benchmark scan were the longest step from upload-complete to ready).
        let store = self.store
        try await withThrowingTaskGroup(of: Void.self) { group in
            var inFlight = 0
            for file in converted.files {
                if inFlight == Self.concurrentUploads {
                    try await group.next()
                    inFlight -= 1
                }
                let (path, key, contentType) = (folder + "/out/" + file.name, base + file.name, file.contentType)
                group.addTask { _ = try await store.put(fileAt: path, key: key, contentType: contentType) }
                inFlight += 1
                keys[file.name] = base + file.name
            }
            try await group.waitForAll()
        }
        // Last: a manifest in the store always names files that are there.
        try await store.put(fileAt: folder + "/out/" + converted.manifest, key: base + converted.manifest,
                            contentType: "application/json")
        let glbs = converted.files.map(\.name).filter { $0.hasSuffix(".glb") }.sorted().map { base + $0 }
        return TranscodeOutputs(manifestKey: base + converted.manifest,
                                thumbnailKey: keys["thumbnail.png"] ?? base + "thumbnail.png",
                                thumbnailWebpKey: keys["thumbnail.webp"] ?? base + "thumbnail.webp",
                                glbKeys: glbs, qualityGrade: converted.qualityGrade)
    }

    /// Downloads one source; a missing object or one of another size than upload-complete
    /// saw fails the job (the upload is gone or was replaced), anything else is transient.
    private func download(_ key: String, declared: Int64, to path: String, name: String, budget: Int64) async throws {
        guard declared <= budget else {
            throw TranscodeFailure("\(name) is \(declared) bytes, over the \(maxJobBytes) bytes one job may hold")
        }
        guard let info = try await store.head(key) else {
            throw TranscodeFailure("\(name) is no longer in the store (\(key)); upload the scan again")
        }
        guard info.size == declared else {
            throw TranscodeFailure("\(name) in the store is \(info.size) bytes, not the \(declared) declared at upload-complete")
        }
        let result: Result<Int64, ObjectStoreError>
        do { result = .success(try await store.get(key, toFileAt: path)) } catch { result = .failure(error) }
        if case .failure(let error) = result {
            if error.code == .notFound { throw TranscodeFailure("\(name) is no longer in the store (\(key)); upload the scan again") }
            throw error
        }
    }
}

/// Presigned GETs from the store for the catch-up query.
public struct StoreOutputLinks: OutputLinks {
    let store: any ObjectStore
    let ttl: Duration

    public init(store: any ObjectStore, ttl: Duration) {
        self.store = store
        self.ttl = ttl
    }

    public func presign(_ keys: [String]) async throws -> ([String: String], Date) {
        var urls: [String: String] = [:]
        var expires = Date.distantFuture
        for key in keys {
            let request = try store.presignGet(key: key, expiresIn: ttl)
            urls[key] = request.url
            expires = min(expires, request.expiresAt)
        }
        return (urls, expires == .distantFuture ? Date().addingTimeInterval(ttl.timeInterval) : expires)
    }
}
