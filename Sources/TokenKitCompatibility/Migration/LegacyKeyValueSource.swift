public import Foundation
public import Persistence

/// Where an older app version kept its tokens: a key-value store such as `UserDefaults` or the Keychain.
///
/// ``SessionMigrator`` reads a ``LegacySessionLayout``'s keys from a source once, saves the session in a
/// ``/Persistence/TokenStore``, and then removes the keys. A conformance for a dictionary:
///
/// ```swift
/// struct DictionarySource: LegacyKeyValueSource {
///     let values: [String: Data]
///     func value(forKey key: String) async throws(PersistenceError) -> Data? { values[key] }
///     func removeValue(forKey key: String) async throws(PersistenceError) { throw .writeFailed }
/// }
/// ```
public protocol LegacyKeyValueSource: Sendable {
    /// The bytes stored under `key` (a string value as its UTF-8), or `nil` when there are none.
    ///
    /// - Parameter key: The key.
    /// - Returns: The stored bytes, or `nil`.
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the source cannot be read right now (a locked Keychain);
    ///   never report that as `nil`.
    func value(forKey key: String) async throws(PersistenceError) -> Data?

    /// Removes the value under `key`. Removing a missing key succeeds.
    ///
    /// - Parameter key: The key.
    /// - Throws: A ``/Persistence/PersistenceError`` when the removal fails.
    func removeValue(forKey key: String) async throws(PersistenceError)
}

/// A legacy source in memory, for tests and for values an app has already read itself.
public actor InMemoryLegacyKeyValueSource: LegacyKeyValueSource {
    /// The values by key.
    public private(set) var values: [String: Data]

    /// Creates a source holding `values`.
    ///
    /// - Parameter values: Bytes by key.
    public init(values: [String: Data] = [:]) {
        self.values = values
    }

    /// Creates a source holding string values, as their UTF-8.
    ///
    /// - Parameter strings: Strings by key.
    public init(strings: [String: String]) {
        self.values = strings.mapValues { Data($0.utf8) }
    }

    /// The bytes under `key`.
    ///
    /// - Parameter key: The key.
    /// - Returns: The bytes, or `nil`.
    public func value(forKey key: String) async -> Data? {
        values[key]
    }

    /// Removes the value under `key`.
    ///
    /// - Parameter key: The key.
    public func removeValue(forKey key: String) async {
        values[key] = nil
    }

    /// Stores `value` under `key`, or removes it when `value` is `nil`.
    ///
    /// - Parameters:
    ///   - value: The bytes, or `nil`.
    ///   - key: The key.
    public func setValue(_ value: Data?, forKey key: String) {
        values[key] = value
    }
}

/// A legacy source built from closures: adapt any storage API, or inject failures in tests.
public struct ClosureLegacyKeyValueSource: LegacyKeyValueSource {
    /// Reads the bytes under a key.
    public typealias Value = @Sendable (_ key: String) async throws -> Data?
    /// Removes the value under a key.
    public typealias Remove = @Sendable (_ key: String) async throws -> Void

    private let valueClosure: Value
    private let removeClosure: Remove

    /// Creates a source from closures. Errors other than ``/Persistence/PersistenceError`` reach callers as
    /// ``/Persistence/PersistenceError/readFailed`` (from `value`) or ``/Persistence/PersistenceError/writeFailed`` (from `remove`).
    ///
    /// - Parameters:
    ///   - value: Called by ``value(forKey:)``.
    ///   - remove: Called by ``removeValue(forKey:)``.
    public init(value: @escaping Value, remove: @escaping Remove) {
        self.valueClosure = value
        self.removeClosure = remove
    }

    /// Reads through the `value` closure.
    ///
    /// - Parameter key: The key.
    /// - Returns: What the closure returns.
    /// - Throws: What the closure throws, as a ``/Persistence/PersistenceError``.
    public func value(forKey key: String) async throws(PersistenceError) -> Data? {
        do {
            return try await valueClosure(key)
        } catch {
            throw (error as? PersistenceError) ?? PersistenceError.readFailed.with(detail: "\(type(of: error))")
        }
    }

    /// Removes through the `remove` closure.
    ///
    /// - Parameter key: The key.
    /// - Throws: What the closure throws, as a ``/Persistence/PersistenceError``.
    public func removeValue(forKey key: String) async throws(PersistenceError) {
        do {
            try await removeClosure(key)
        } catch {
            throw (error as? PersistenceError) ?? PersistenceError.writeFailed.with(detail: "\(type(of: error))")
        }
    }
}

/// A legacy source over `UserDefaults`: a suite, or the standard defaults.
///
/// A `Data` value is read as it is and a `String` value as its UTF-8.
public struct UserDefaultsLegacyKeyValueSource: LegacyKeyValueSource {
    /// The suite name, or `nil` for `UserDefaults.standard`.
    package let suiteName: String?

    /// Creates a source over a `UserDefaults` suite.
    ///
    /// - Parameter suiteName: The suite name, or `nil` for the standard defaults.
    public init(suiteName: String? = nil) {
        self.suiteName = suiteName
    }

    private var defaults: UserDefaults? {
        suiteName.map { UserDefaults(suiteName: $0) } ?? UserDefaults.standard
    }

    /// The value under `key`, as bytes.
    ///
    /// - Parameter key: The key.
    /// - Returns: The bytes, or `nil`.
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the suite cannot be opened.
    public func value(forKey key: String) async throws(PersistenceError) -> Data? {
        guard let defaults else {
            throw PersistenceError.unavailable.with(detail: "the defaults suite cannot be opened")
        }
        if let data = defaults.data(forKey: key) { return data }
        return defaults.string(forKey: key).map { Data($0.utf8) }
    }

    /// Removes the value under `key`.
    ///
    /// - Parameter key: The key.
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the suite cannot be opened.
    public func removeValue(forKey key: String) async throws(PersistenceError) {
        guard let defaults else {
            throw PersistenceError.unavailable.with(detail: "the defaults suite cannot be opened")
        }
        defaults.removeObject(forKey: key)
    }
}
