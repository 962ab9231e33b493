import AuthToken
import Foundation

/// A JWS in compact serialization, split and decoded but not verified.
struct CompactJWS {
    let header: [String: JSONValue]
    let claims: [String: JSONValue]
    let payload: [UInt8]
    let signature: [UInt8]
    /// The length of `BASE64URL(header) . BASE64URL(payload)`: the token's first `signingInputCount` bytes are
    /// what the signature covers (read in place, never copied).
    let signingInputCount: Int

    /// Splits and decodes `token`. Every failure is ``TokenVerificationError/malformedToken`` except a repeated
    /// JSON name, which is ``TokenVerificationError/duplicateJSONName``.
    init(_ token: UnsafeBufferPointer<UInt8>) throws(TokenVerificationError) {
        // The first two dots; a third, like any byte outside the alphabet, fails the signature's decoding.
        guard let first = Self.dot(in: token, from: 0), let second = Self.dot(in: token, from: first + 1) else {
            throw .malformedToken
        }
        // An empty signature is let through to the header check, so `alg: none` gets its own reason; no
        // algorithm accepts an empty signature.
        guard first > 0, second > first + 1,
            let headerJSON = Base64URL.decode(UnsafeBufferPointer(rebasing: token[..<first])),
            let payload = Base64URL.decode(UnsafeBufferPointer(rebasing: token[(first + 1)..<second])),
            let signature = Base64URL.decode(UnsafeBufferPointer(rebasing: token[(second + 1)...]))
        else { throw .malformedToken }
        header = try Self.object(headerJSON)
        claims = try Self.object(payload)
        self.payload = payload
        self.signature = signature
        signingInputCount = second
    }

    /// Splits and decodes `token` (the fuzz target's entry).
    init(_ token: [UInt8]) throws(TokenVerificationError) {
        let result: Result<CompactJWS, TokenVerificationError> = token.withUnsafeBufferPointer { buffer in
            do throws(TokenVerificationError) {
                return .success(try CompactJWS(buffer))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// The index of the first `.` at or after `start` (`memchr`, which reads many bytes a step).
    private static func dot(in token: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard let base = token.baseAddress, start < token.count,
            let found = memchr(base + start, Int32(UInt8(ascii: ".")), token.count - start)
        else { return nil }
        return UnsafeRawPointer(found) - UnsafeRawPointer(base)
    }

    private static func object(_ bytes: [UInt8]) throws(TokenVerificationError) -> [String: JSONValue] {
        let result: Result<JSONValue, JSONParser.Failure> = bytes.withUnsafeBufferPointer { buffer in
            do throws(JSONParser.Failure) {
                return .success(try JSONParser.parse(buffer, rejectingDuplicateNames: true))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(.object(let members)): return members
        case .success: throw .malformedToken
        case .failure(.duplicateName): throw .duplicateJSONName
        case .failure: throw .malformedToken
        }
    }
}
