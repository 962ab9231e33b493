package import Foundation

extension FileTokenStore {
    /// Creates a store in the platform's usual place for an app's data, under a directory named after the app.
    ///
    /// - Apple platforms: `Application Support/<appName>/Sessions` in the user's domain (inside the app's
    ///   container on iOS).
    /// - Linux and elsewhere: `$XDG_DATA_HOME/<appName>/sessions`, or `~/.local/share/<appName>/sessions` when
    ///   `XDG_DATA_HOME` is unset or not absolute (the XDG Base Directory rules).
    ///
    /// Nothing is touched until the first operation; the first write makes the directories with mode 0700.
    ///
    /// - Parameters:
    ///   - appName: The app's directory name, such as `"MyApp"` or a bundle ID. Slashes are replaced.
    ///   - configuration: Encryption and logging options.
    public init(appName: String, configuration: Configuration = Configuration()) {
        self.init(
            directory: FileTokenStore.defaultDirectory(
                appName: appName, environment: ProcessInfo.processInfo.environment),
            configuration: configuration)
    }

    /// The directory ``init(appName:configuration:)`` uses, for a given environment.
    ///
    /// - Parameters:
    ///   - appName: The app's directory name.
    ///   - environment: The process environment (`XDG_DATA_HOME`, `HOME`).
    /// - Returns: The sessions directory.
    package static func defaultDirectory(appName: String, environment: [String: String]) -> URL {
        let name = appName.isEmpty ? "TokenKit" : appName.replacingOccurrences(of: "/", with: "_")
        #if canImport(Darwin)
            let base =
                FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
                ?? FileManager.default.homeDirectoryForCurrentUser.appending(path: "Library/Application Support")
            return base.appending(path: name, directoryHint: .isDirectory)
                .appending(path: "Sessions", directoryHint: .isDirectory)
        #else
            let base: URL
            if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
                base = URL(filePath: xdg, directoryHint: .isDirectory)
            } else {
                let home = environment["HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? NSHomeDirectory()
                base = URL(filePath: home, directoryHint: .isDirectory).appending(path: ".local/share")
            }
            return base.appending(path: name, directoryHint: .isDirectory)
                .appending(path: "sessions", directoryHint: .isDirectory)
        #endif
    }
}
