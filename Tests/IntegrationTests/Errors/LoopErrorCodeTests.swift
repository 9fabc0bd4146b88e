import Foundation
import RunLoopKit
import RunLoopKitFoundation
import RunLoopKitGLib
import RunLoopKitServices
import Testing

/// One error type, `LoopError`, whose codes each module declares in its own extension of `LoopError.Code`: the rule
/// its doc comment states (a code's name is its constant's name, unique across the package's modules), checked on
/// the sources, since two modules' extensions could declare the same name without the compiler noticing. In
/// IntegrationTests: it reads every product's sources and imports every product.
@Suite struct LoopErrorCodeTests {
    /// A code constant of one module: `static let NAME = Code("NAME")` (or `Self("NAME")` in an extension).
    struct Declaration: Hashable {
        let module: String
        let constant: String
        let name: String
    }

    /// Every code declared in `Sources/<module>/` for every module: the constants of `LoopError.Code` and of its
    /// extensions.
    static func declarations() throws -> [Declaration] {
        let sources = DocumentationExamples.packageRoot.appendingPathComponent("Sources")
        let pattern = try Regex(#"static let (\w+) = (?:Code|Self)\("([^"]*)"\)"#)
        var found: [Declaration] = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            guard text.contains("struct Code") || text.contains("extension LoopError.Code") else { continue }
            let module = file.path.components(separatedBy: "/Sources/").last!.split(separator: "/").first!
            for match in text.matches(of: pattern) {
                found.append(
                    Declaration(
                        module: String(module), constant: String(match.output[1].substring!),
                        name: String(match.output[2].substring!)))
            }
        }
        return found
    }

    @Test func everyCodesNameIsItsConstantsNameAndUniqueInThePackage() throws {
        let declarations = try Self.declarations()
        #expect(declarations.count >= 20)
        for declaration in declarations {
            #expect(declaration.name == declaration.constant, "\(declaration)")
        }
        let byName = Dictionary(grouping: declarations, by: \.name).filter { $0.value.count > 1 }
        #expect(byName.isEmpty, "declared more than once: \(byName)")
    }

    @Test func eachModulesCodesLiveInThatModule() throws {
        let modules = Dictionary(grouping: try Self.declarations(), by: \.module).mapValues { Set($0.map(\.name)) }
        #expect(modules["RunLoopKitServices"] == ["notFound", "permissionDenied", "limitReached", "unsupported"])
        #expect(modules["RunLoopKitGLib"] == ["libraryUnavailable", "symbolMissing", "contextOwnedElsewhere"])
        #expect(modules["RunLoopKitFoundation"] == ["notOnLoopThread"])
        let core = modules["RunLoopKit"] ?? []
        #expect(core.isSuperset(of: ["alreadyBridged", "invalidMode", "loopTerminated", "schedulingNotPermitted"]))
        #expect(Set(modules.keys) == ["RunLoopKit", "RunLoopKitServices", "RunLoopKitGLib", "RunLoopKitFoundation"])
    }

    @Test func codesAreTheirNamesAndDescribeTheError() {
        #expect(LoopError.Code.notFound.description == "notFound")
        #expect(LoopError.Code.symbolMissing.description == "symbolMissing")
        #expect(LoopError.Code.notOnLoopThread != LoopError.Code.alreadyBridged)
        let error = LoopError(.libraryUnavailable, message: "no GLib")
        #expect(error.description == "LoopError.libraryUnavailable: no GLib")
    }
}
