public import Foundation
public import TokenKitAppLifecycle

/// A ``/TokenKitAppLifecycle/SessionChangeNotifier`` for tests on any platform: processes sharing a directory
/// post by appending a byte to a file there and receive by watching its size, as Darwin notifications do between
/// an app and its extensions.
public struct FileSessionChangeNotifier: SessionChangeNotifier {
    /// The file the notifications go through.
    public let file: URL
    private let pollInterval: Duration

    /// Creates a notifier on `directory`.
    ///
    /// - Parameters:
    ///   - directory: A directory every process can write (the test's stand-in for the App Group container).
    ///   - name: The notification's name; `session-changed` by default.
    ///   - pollInterval: How often receivers look at the file; 5 ms by default.
    public init(directory: URL, name: String = "session-changed", pollInterval: Duration = .milliseconds(5)) {
        self.file = directory.appendingPathComponent(name + ".notify")
        self.pollInterval = pollInterval
    }

    /// Appends one byte to the file.
    public func post() {
        if !FileManager.default.fileExists(atPath: file.path) {
            _ = FileManager.default.createFile(atPath: file.path, contents: nil)
        }
        guard let handle = try? FileHandle(forWritingTo: file) else { return }
        defer { try? handle.close() }
        _ = try? handle.seekToEnd()
        try? handle.write(contentsOf: Data([1]))
    }

    /// Yields each time the file grows, from now on.
    ///
    /// - Returns: The notifications.
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let file = file
        let pollInterval = pollInterval
        let task = Task {
            var seen = Self.size(file)
            while !Task.isCancelled {
                try? await Task.sleep(for: pollInterval)
                let size = Self.size(file)
                if size != seen {
                    seen = size
                    continuation.yield()
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    private static func size(_ file: URL) -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber)?.uint64Value ?? 0
    }
}
