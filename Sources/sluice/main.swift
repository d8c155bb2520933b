import SluiceCLI

await SluiceCommand.start()
