import Foundation
import QuickDemo

// `swift run --package-path Examples/Demo tokenkit-demo [--expiries N] [--requests N] [--token-lifetime N]`
let options: QuickDemo.Options
do {
    options = try QuickDemo.Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(2)
}
let passed = await QuickDemo(options: options) { line in print(line) }.run()
exit(passed ? 0 : 1)
