// libFuzzer entry point for the JWT parser. Built together with Sources/AuthToken by Fuzz/run.
import Foundation

/// Parses one input as a JWT and exercises every accessor; libFuzzer calls it for each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWT(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: bytes, as: UTF8.self)
    if let jwt = try? JWT(parsing: text) {
        // Touch every accessor: none may trap.
        _ = jwt.claims.expiration
        _ = jwt.claims.issuedAt
        _ = jwt.claims.notBefore
        _ = jwt.claims.audience
        _ = jwt.claims.subject
        _ = try? jwt.claims.date("exp")
        _ = jwt.header.algorithm
        for value in jwt.claims.members.values {
            _ = value.intValue
            _ = value.doubleValue
        }
    }
    let token = AuthToken.withParsedExpiration(
        accessToken: text, refreshToken: text.isEmpty ? nil : "r", receivedAt: Date(timeIntervalSince1970: 0))
    _ = token.validate(now: Date(timeIntervalSince1970: 1_000_000_000))
    _ = token.willExpireSoon(at: Date(timeIntervalSince1970: 1_000_000_000))
    _ = token.sanitizedDescription
    return 0
}
