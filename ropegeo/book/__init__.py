"""What the book adds on top of the package: figures, live labs, exercises, SymPy derivations and
a catalogue of rotary implementations, correct and broken."""
