import AuthToken

/// A JWS in compact serialization, split and decoded but not verified.
struct CompactJWS {
    let header: [String: JSONValue]
    let claims: [String: JSONValue]
    let payload: [UInt8]
    let signature: [UInt8]
    /// `BASE64URL(header) . BASE64URL(payload)`, the bytes the signature covers.
    let signingInput: ArraySlice<UInt8>

    /// Splits and decodes `token`. Every failure is ``TokenVerificationError/malformedToken`` except a repeated
    /// JSON name, which is ``TokenVerificationError/duplicateJSONName``.
    init(_ token: [UInt8]) throws(TokenVerificationError) {
        var dots: [Int] = []
        for (index, byte) in token.enumerated() {
            if byte == UInt8(ascii: ".") {
                dots.append(index)
                guard dots.count <= 2 else { throw .malformedToken }
            } else if !Base64URL.isAlphabet(byte) {
                throw .malformedToken
            }
        }
        guard dots.count == 2 else { throw .malformedToken }
        let headerBytes = token[..<dots[0]]
        let payloadBytes = token[(dots[0] + 1)..<dots[1]]
        let signatureBytes = token[(dots[1] + 1)...]
        // An empty signature is let through to the header check, so `alg: none` gets its own reason; no
        // algorithm accepts an empty signature.
        guard !headerBytes.isEmpty, !payloadBytes.isEmpty,
            let headerJSON = Base64URL.decode(headerBytes), let payload = Base64URL.decode(payloadBytes),
            let signature = Base64URL.decode(signatureBytes)
        else { throw .malformedToken }
        header = try Self.object(headerJSON)
        claims = try Self.object(payload)
        self.payload = payload
        self.signature = signature
        signingInput = token[..<dots[1]]
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
