package import Foundation

/// One module's translations of its messages, read once from the module's resource bundle: `ja.json`, a flat
/// JSON object from message key to text (`%d` stands for a number).
///
/// English stays in the code, so a binary moved without its resource bundle still reads every message, in
/// English. Nothing here uses `Bundle.module`, whose accessor stops the process when the bundle is missing.
package final class MessageCatalog: Sendable {
    /// The translations, by language and message key.
    package let tables: [MessageLanguage: [String: String]]

    /// Reads the translations of the module `module` of this package.
    ///
    /// - Parameter module: The module's name, such as `AuthToken` (its bundle is `TokenKit_AuthToken`).
    package init(module: String) {
        var tables: [MessageLanguage: [String: String]] = [:]
        for language in MessageLanguage.allCases where language != .english {
            let file = "\(language.rawValue).json"
            guard let directory = Self.resourceDirectory(bundle: "TokenKit_\(module)", containing: file),
                let data = try? Data(contentsOf: directory.appendingPathComponent(file)),
                let table = try? JSONDecoder().decode([String: String].self, from: data)
            else { continue }
            tables[language] = table
        }
        self.tables = tables
    }

    /// The message `key` in `language`.
    ///
    /// - Parameters:
    ///   - key: The message key, such as `AuthTokenError.expired`.
    ///   - english: The English text, also the fallback when no translation is found.
    ///   - language: The language; the user's by default.
    ///   - number: The number that replaces `%d`, if the message carries one.
    /// - Returns: The text.
    package func text(
        _ key: String, english: String, in language: MessageLanguage = .preferred, number: Int? = nil
    ) -> String {
        guard language != .english, let template = tables[language]?[key] else { return english }
        guard let number else { return template }
        return template.replacingOccurrences(of: "%d", with: String(number))
    }

    /// The directory holding `file` in the SwiftPM resource bundle `bundle`, searched for beside the main bundle,
    /// the executable and every loaded bundle (a test runner); `nil` when it is not found.
    ///
    /// - Parameters:
    ///   - bundle: The bundle's name without its extension, such as `TokenKit_TokenRefresh`.
    ///   - file: A file the directory must hold.
    /// - Returns: The directory.
    package static func resourceDirectory(bundle: String, containing file: String) -> URL? {
        var places = [
            Bundle.main.resourceURL, Bundle.main.bundleURL, Bundle.main.executableURL?.deletingLastPathComponent(),
        ]
        places += Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
        return resourceDirectory(
            bundle: bundle, containing: file, in: places.compactMap { $0 },
            fileExists: { FileManager.default.fileExists(atPath: $0.path) })
    }

    /// The seam under ``resourceDirectory(bundle:containing:)``: the layouts SwiftPM gives a resource bundle, tried
    /// in each of `places`. On Linux, `<bundle>.resources/<file>`; on Apple platforms `<bundle>.bundle/<file>` (iOS,
    /// tvOS, watchOS, visionOS: a flat bundle) or `<bundle>.bundle/Contents/Resources/<file>` (macOS). Tested on
    /// Linux with each layout laid out in a temporary directory.
    ///
    /// - Parameters:
    ///   - bundle: The bundle's name without its extension.
    ///   - file: A file the directory must hold.
    ///   - places: The directories that may hold the bundle, in order.
    ///   - fileExists: Whether a file exists.
    /// - Returns: The first directory holding `file`, or `nil`.
    package static func resourceDirectory(
        bundle: String, containing file: String, in places: [URL], fileExists: (URL) -> Bool
    ) -> URL? {
        for place in places {
            for name in [bundle + ".resources", bundle + ".bundle"] {
                let root = place.appendingPathComponent(name)
                for directory in [root, root.appendingPathComponent("Contents/Resources")]
                where fileExists(directory.appendingPathComponent(file)) {
                    return directory
                }
            }
        }
        return nil
    }
}
