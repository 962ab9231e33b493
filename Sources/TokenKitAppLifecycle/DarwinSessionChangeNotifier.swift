// Apple platforms only: the Darwin notification center (notify(3)). Everything that reacts to a notification is
// platform-neutral and tested on Linux with FileSessionChangeNotifier.
#if canImport(Darwin)
    import Darwin
    import Dispatch

    /// A ``SessionChangeNotifier`` over Darwin notifications (`notify_post`, `notify_register_dispatch`), which
    /// reach every process of the device: an app and its extensions name one notification, such as
    /// `"<App Group identifier>.session-changed"`.
    ///
    /// See Apple's `notify(3)` manual page: a notification carries no data, and posts may coalesce.
    public struct DarwinSessionChangeNotifier: SessionChangeNotifier {
        /// The notification's name, shared by the app and its extensions.
        public let name: String

        /// Creates a notifier.
        ///
        /// - Parameter name: The notification's name, such as the App Group identifier plus `.session-changed`.
        public init(name: String) {
            self.name = name
        }

        /// `notify_post(name)`.
        public func post() {
            _ = notify_post(name)
        }

        /// `notify_register_dispatch` for as long as the stream is iterated, then `notify_cancel`.
        ///
        /// - Returns: The notifications.
        public func changes() -> AsyncStream<Void> {
            let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
            var token: Int32 = 0
            // The handler is the only way notify(3) delivers; a global queue is used only to hop into the stream.
            let status = notify_register_dispatch(name, &token, DispatchQueue.global()) { _ in
                continuation.yield()
            }
            guard status == NOTIFY_STATUS_OK else {
                continuation.finish()
                return stream
            }
            let registration = token
            continuation.onTermination = { _ in _ = notify_cancel(registration) }
            return stream
        }
    }
#endif
