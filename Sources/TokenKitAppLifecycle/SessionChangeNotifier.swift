/// Tells the other processes sharing a session (an app and its extensions) that the stored session changed, so
/// they re-read it instead of refreshing it themselves.
///
/// `DarwinSessionChangeNotifier` posts a Darwin notification on Apple platforms. For tests on any platform,
/// `FileSessionChangeNotifier` (the `TokenKitKeychainTesting` product) does the same through a file in a shared
/// directory. A notification carries no data: receivers read the store.
///
/// A conformance for one process, such as a unit test:
///
/// ```swift
/// final class LocalNotifier: SessionChangeNotifier, @unchecked Sendable {
///     private let (stream, continuation) = AsyncStream<Void>.makeStream()
///     func post() { continuation.yield() }
///     func changes() -> AsyncStream<Void> { stream }
/// }
/// ```
public protocol SessionChangeNotifier: Sendable {
    /// Tells every process listening on the same name that the stored session changed.
    func post()

    /// The notifications posted from now on, by any process (this one included), until the stream's consumer
    /// stops iterating.
    ///
    /// - Returns: One element per notification; several quick posts may arrive as one.
    func changes() -> AsyncStream<Void>
}
