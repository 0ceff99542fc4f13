import BackboneCLI
import Foundation

@main
struct Backbone {
    static func main() async {
        let code = await BackboneCommand.main(arguments: Array(CommandLine.arguments.dropFirst()))
        exit(code)
    }
}
