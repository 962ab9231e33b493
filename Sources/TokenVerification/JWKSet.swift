import AuthToken
public import Foundation

/// A JSON Web Key Set (RFC 7517 section 5): the usable signing keys of a document, and a record of the
/// keys that were skipped.
///
/// A key that does not parse, or fails a check (an RSA modulus under 2048 bits, an exponent of 1, a point
/// off its curve, an unsupported type or curve), is skipped and listed in ``skipped``; the others stay
/// usable. The document as a whole is refused only when it is too large, has too many keys, or is not a
/// JSON object with a `keys` array.
public struct JWKSet: Sendable {
    /// Bounds on a key set document.
    public struct Limits: Sendable, Hashable {
        /// The largest document accepted, in bytes. Default 256 KiB (a set of 20 RSA-4096 keys is about 16 KiB).
        public var maximumBytes: Int
        /// The most entries the `keys` array may have. Default 100.
        public var maximumKeys: Int
        /// Whether `oct` (symmetric) keys are parsed, for a key set configured with the application and served
        /// by a ``StaticJWKSSource``. Default `false`. An `oct` key then verifies HMAC tokens that name its `kid`
        /// (the algorithm must also be allowed); ``RemoteJWKSSource`` ignores this.
        public var allowsSymmetricKeys: Bool

        /// Limits with the given bounds.
        ///
        /// - Parameters:
        ///   - maximumBytes: The largest document accepted.
        ///   - maximumKeys: The most entries in `keys`.
        ///   - allowsSymmetricKeys: Whether `oct` keys are parsed.
        public init(maximumBytes: Int = 256 * 1024, maximumKeys: Int = 100, allowsSymmetricKeys: Bool = false) {
            self.maximumBytes = maximumBytes
            self.maximumKeys = maximumKeys
            self.allowsSymmetricKeys = allowsSymmetricKeys
        }
    }

    /// A member of `keys` that was not usable.
    public struct SkippedKey: Sendable, Hashable, CustomStringConvertible {
        /// Its position in `keys`.
        public let index: Int
        /// Its `kid`, if it had a valid one.
        public let keyID: String?
        /// Why it was skipped, such as `rsaModulusTooSmall`, `pointNotOnCurve` or `unsupportedCurve`.
        public let reason: String

        /// `key #<index> (kid <kid>): <reason>`.
        public var description: String {
            "key #\(index)\(keyID.map { " (kid \($0))" } ?? ""): \(reason)"
        }
    }

    /// The usable keys, in document order.
    public let keys: [JWK]
    /// The keys that were skipped, with their reasons.
    public let skipped: [SkippedKey]
    /// `kid` and thumbprint of every key, so a verified-token cache hit checks its key in constant time.
    private let identities: Set<Identity>

    /// What makes a key the same key: its `kid` and its material.
    private struct Identity: Hashable, Sendable {
        let keyID: String?
        let thumbprint: String

        init(_ key: JWK) {
            keyID = key.keyID
            thumbprint = key.thumbprint
        }
    }

    /// A set of already parsed keys.
    ///
    /// - Parameter keys: The keys.
    public init(keys: [JWK]) {
        self.keys = keys
        self.skipped = []
        identities = Set(keys.map(Identity.init))
    }

    /// Parses a key set document.
    ///
    /// - Parameters:
    ///   - data: The JSON document.
    ///   - limits: Bounds on the document.
    /// - Throws: ``TokenVerificationError/keySetTooLarge``, ``TokenVerificationError/tooManyKeys``,
    ///   ``TokenVerificationError/duplicateJSONName`` or ``TokenVerificationError/keySetInvalid``.
    public init(json data: Data, limits: Limits = Limits()) throws(TokenVerificationError) {
        guard data.count <= limits.maximumBytes else { throw .keySetTooLarge }
        let document = try Self.parseObject(data)
        guard let entries = document["keys"]?.arrayValue else { throw .keySetInvalid }
        guard entries.count <= limits.maximumKeys else { throw .tooManyKeys }
        var keys: [JWK] = []
        var skipped: [SkippedKey] = []
        for (index, entry) in entries.enumerated() {
            do {
                keys.append(try JWK(entry, allowsSymmetricKeys: limits.allowsSymmetricKeys))
            } catch {
                let kid = entry.objectValue?["kid"]?.stringValue.flatMap { KeyID.isValid($0) ? $0 : nil }
                skipped.append(SkippedKey(index: index, keyID: kid, reason: error.rawValue))
            }
        }
        self.keys = keys
        self.skipped = skipped
        identities = Set(keys.map(Identity.init))
    }

    /// Parses a JSON object with the strict parser (duplicate names refused).
    static func parseObject(_ data: Data) throws(TokenVerificationError) -> [String: JSONValue] {
        let result: Result<JSONValue, JSONParser.Failure> = data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            do throws(JSONParser.Failure) {
                return .success(try JSONParser.parse(bytes, rejectingDuplicateNames: true))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let value):
            guard let object = value.objectValue else { throw .keySetInvalid }
            return object
        case .failure(.duplicateName): throw .duplicateJSONName
        case .failure: throw .keySetInvalid
        }
    }

    /// The key a token with `keyID` and `algorithm` names, if this set has it.
    ///
    /// With a `kid`, the first key with that `kid` that can verify the algorithm, or else the first key with
    /// that `kid` (so the caller reports a key/algorithm mismatch rather than an unknown key). Without a
    /// `kid`, the one key that can verify the algorithm; `nil` if there are none or several. A `kid` that only a
    /// skipped key had is ``Lookup/skipped``, not unknown.
    func key(for keyID: String?, algorithm: JWSAlgorithm) -> Lookup {
        if let keyID {
            var sameID: JWK?
            for key in keys where key.keyID == keyID {
                if key.canVerify(algorithm) { return .found(key) }
                if sameID == nil { sameID = key }
            }
            if let sameID { return .found(sameID) }
            return skipped.contains { $0.keyID == keyID } ? .skipped : .unknown
        }
        let candidates = keys.filter { $0.canVerify(algorithm) }
        switch candidates.count {
        case 0: return .unknown
        case 1: return .found(candidates[0])
        default: return .ambiguous
        }
    }

    /// Whether a key with this thumbprint and `kid` is in the set.
    func contains(_ key: JWK) -> Bool {
        // A few keys (the usual set): compared in place, where equal strings sharing storage compare at once.
        if keys.count <= 8 {
            return keys.contains { $0.thumbprint == key.thumbprint && $0.keyID == key.keyID }
        }
        return identities.contains(Identity(key))
    }

    enum Lookup {
        case found(JWK)
        case unknown
        case ambiguous
        /// The set had a key with this `kid`, but skipped it as unusable.
        case skipped
    }
}
