import Crypto
import Mongo
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The portal's stylesheet and script (`Resources/portal/static`), read once and served with a strong ETag.
struct PortalStaticFiles: Sendable {
    struct File: Sendable {
        let bytes: ByteBuffer
        let contentType: String
        let etag: String
    }

    let files: [String: File]

    /// The files shipped with the hub.
    /// - Throws: when they are missing (a packaging bug).
    static func bundled() throws -> PortalStaticFiles { try cached.get() }

    private static let cached: Result<PortalStaticFiles, any Error> = Result {
        guard let directory = Bundle.module.resourceURL?.appendingPathComponent("portal/static") else {
            throw PortalError(
                status: .internalServerError, title: "Broken installation", message: "The portal's files are missing.")
        }
        let types = ["css": "text/css; charset=utf-8", "js": "text/javascript; charset=utf-8"]
        var files: [String: File] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            guard let type = types[(name as NSString).pathExtension] else { continue }
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            let digest = Hex.encode(SHA256.hash(data: data).prefix(12))
            files[name] = File(bytes: ByteBuffer(bytes: data), contentType: type, etag: "\"\(digest)\"")
        }
        return PortalStaticFiles(files: files)
    }

    /// GET /portal/static/:file: the file, or 304 when the browser has it.
    func response(name: String, request: Request) throws -> Response {
        guard let file = files[name] else { throw PortalError.notFound("This file") }
        var headers: HTTPFields = [.contentType: file.contentType, .eTag: file.etag, .cacheControl: "no-cache"]
        if request.headers[.ifNoneMatch] == file.etag {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentLength] = String(file.bytes.readableBytes)
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: file.bytes))
    }
}
