"""Compiles the tutorial's model into model.pt2 for inference.cpp (CMake runs this).

usage: python model.py [output.pt2]
"""
import os
import sys

import torch

import aotc


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(10, 16)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(16, 1)
        self.sigmoid = torch.nn.Sigmoid()

    def forward(self, x):
        return self.sigmoid(self.fc2(self.relu(self.fc1(x))))


def main() -> None:
    torch.manual_seed(0)
    default = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.pt2")
    path = sys.argv[1] if len(sys.argv) > 1 else default
    with torch.no_grad():
        batch = torch.export.Dim("batch", min=1, max=1024)
        ep = torch.export.export(Model(), (torch.randn(8, 10),), dynamic_shapes={"x": {0: batch}})
        print(aotc.compile_and_package(ep, package_path=path))


if __name__ == "__main__":
    main()
