import Foundation

/// The languages TokenKit's messages are written in, and the one the user prefers: one choice shared by the
/// error descriptions of every module and by `UserMessage`.
package enum MessageLanguage: String, Sendable, CaseIterable {
    /// English (`en`), also the fallback.
    case english = "en"
    /// Japanese (`ja`).
    case japanese = "ja"

    /// A language for the current task and the tasks it starts, ahead of the user's: tests check each language
    /// side by side without touching the process's environment or locale.
    @TaskLocal package static var override: MessageLanguage?

    /// The language to write messages in now: ``override``, else the first of the user's languages that TokenKit
    /// carries, else English.
    package static var preferred: MessageLanguage {
        override ?? first(in: userLanguages()) ?? .english
    }

    /// The first of `identifiers` that TokenKit carries.
    ///
    /// - Parameter identifiers: Language identifiers, most preferred first: BCP 47 (`ja-JP`) or POSIX
    ///   (`ja_JP.UTF-8`).
    /// - Returns: The language, or `nil` when none is carried.
    package static func first(in identifiers: [String]) -> MessageLanguage? {
        for identifier in identifiers {
            let code = identifier.prefix { $0.isASCII && $0.isLetter }.lowercased()
            if let language = MessageLanguage(rawValue: code) { return language }
        }
        return nil
    }

    /// The user's languages, most preferred first.
    ///
    /// Apple platforms: the system's list (`Locale.preferredLanguages`). Elsewhere `Locale.preferredLanguages`
    /// does not follow the environment, so the list is gettext's: the colon-separated `LANGUAGE`, then the locale
    /// of `LC_ALL`, `LC_MESSAGES` or `LANG` (the first set); nothing under the `C` or `POSIX` locale.
    ///
    /// - Parameter environment: The process's environment.
    /// - Returns: Language identifiers, possibly none.
    package static func userLanguages(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> [String] {
        #if canImport(Darwin)
            return Locale.preferredLanguages
        #else
            let names = ["LC_ALL", "LC_MESSAGES", "LANG"]
            guard let locale = names.lazy.compactMap({ environment[$0] }).first(where: { !$0.isEmpty }) else {
                return []
            }
            let name = locale.prefix { $0 != "." && $0 != "@" }
            guard name != "C" && name != "POSIX" else { return [] }
            return (environment["LANGUAGE"] ?? "").split(separator: ":").map(String.init) + [locale]
        #endif
    }
}
