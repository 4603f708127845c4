import Foundation

/// Fetches the cube from `GET /channel` and keeps it: in memory once loaded (the design's `loaded` flag), and the
/// last copy on disk with its ETag, so a start without the network still has a cube and a start with it downloads
/// the cube only when it changed (`If-None-Match`, 304).
actor CubeCache {
    private let hub: HubConnection
    /// Where the last copy is kept, or nil to keep it in memory only.
    private let directory: URL?
    private var loaded: Cube?
    private var etag: String?
    private var diskCopyRead = false

    init(hub: HubConnection, directory: URL?) {
        self.hub = hub
        self.directory = directory
    }

    /// Forgets the cube held here and on disk.
    func forget() {
        loaded = nil
        etag = nil
        diskCopyRead = false
        for file in [bodyFile, etagFile].compactMap({ $0 }) { try? FileManager.default.removeItem(at: file) }
    }

    private var bodyFile: URL? { directory?.appendingPathComponent("cube.json") }
    private var etagFile: URL? { directory?.appendingPathComponent("cube.etag") }

    /// The cube (get_iCube): the loaded copy unless `refresh`, else the hub's, else the copy on disk.
    /// - Throws: the hub's or the network's `MSIKitError` when there is no copy to fall back on.
    func cube(refresh: Bool) async throws(MSIKitError) -> Cube {
        if !refresh, let loaded { return loaded }
        readDiskCopy()
        var headers: [String: String] = [:]
        if loaded != nil, let etag { headers["If-None-Match"] = etag }
        let response: HubConnection.Response
        do {
            response = try await hub.send("GET", ["channel"], headers: headers)
        } catch  where error.code != .cancelled {
            // Offline (or the hub is failing): the last copy is better than no cube.
            if let loaded { return loaded }
            throw error
        }
        if response.status == 304, let loaded { return loaded }
        let cube = try Cube(json: response.body)
        loaded = cube
        etag = response.header("ETag")
        save(response.body, etag: etag)
        return cube
    }

    /// Reads the copy on disk once, the first time the cube is asked for.
    private func readDiskCopy() {
        guard !diskCopyRead else { return }
        diskCopyRead = true
        guard loaded == nil, let bodyFile, let data = try? Data(contentsOf: bodyFile),
            let cube = try? Cube(json: data)
        else { return }
        loaded = cube
        etag = etagFile.flatMap { try? String(contentsOf: $0, encoding: .utf8) }
    }

    /// Keeps the body and its ETag. The old tag goes first and the new one is written last, so a crash in between
    /// leaves a copy without a tag (downloaded again next time), never a tag that vouches for another body.
    /// A copy that cannot be written only costs a download on the next offline start, so failures are ignored.
    private func save(_ body: Data, etag: String?) {
        guard let bodyFile, let etagFile else { return }
        try? FileManager.default.removeItem(at: etagFile)
        guard (try? body.write(to: bodyFile, options: .atomic)) != nil else { return }
        if let etag { try? Data(etag.utf8).write(to: etagFile, options: .atomic) }
    }
}
